//! The geospatial commands. The replies expected here are what Redis
//! 7.0.15 answered to the same commands (its documentation's Sicily).
use super::*;

fn sicily() -> Session {
    let mut s = Session::new();
    s.run("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania");
    s
}

fn coords(lon: &str, lat: &str) -> Reply {
    array(&[
        Reply::Double(lon.as_bytes().to_vec()),
        Reply::Double(lat.as_bytes().to_vec()),
    ])
}

#[test]
fn geoadd_stores_redis_s_scores_and_is_a_zadd() {
    let mut s = Session::new();
    assert_eq!(
        s.logged("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"),
        ["ZADD Sicily 3479099956230698 Palermo 3479447370796909 Catania"]
    );
    s.expect(&[
        ("ZSCORE Sicily Palermo", bulk("3479099956230698")),
        ("GEOADD Sicily CH 13.361389 38.2 Palermo 1 1 New", int(2)),
        (
            "GEOADD Sicily XX 13.361389 38.115556 Palermo 2 2 Newer",
            int(0),
        ),
        ("EXISTS Newer", int(0)),
        ("ZCARD Sicily", int(3)),
    ]);
}

#[test]
fn geoadd_errors() {
    let mut s = Session::new();
    s.expect(&[
        (
            "GEOADD k 200 10 x",
            err("ERR invalid longitude,latitude pair 200.000000,10.000000"),
        ),
        (
            "GEOADD k 10 86 x",
            err("ERR invalid longitude,latitude pair 10.000000,86.000000"),
        ),
        ("GEOADD k abc 10 x", err("ERR value is not a valid float")),
        ("GEOADD k NX XX 10 10 x", err("ERR syntax error")),
        ("GEOADD k 10 10 x 1", err("ERR syntax error")),
        ("EXISTS k", int(0)),
    ]);
}

#[test]
fn geodist_geohash_and_geopos_read_points() {
    let mut s = sicily();
    s.expect(&[
        ("GEODIST Sicily Palermo Catania", bulk("166274.1516")),
        ("GEODIST Sicily Palermo Catania km", bulk("166.2742")),
        ("GEODIST Sicily Palermo Catania MI", bulk("103.3182")),
        ("GEODIST Sicily Palermo Catania ft", bulk("545518.8700")),
        ("GEODIST Sicily Palermo missing", nil()),
        ("GEODIST nokey a b", nil()),
        (
            "GEODIST Sicily Palermo Catania yd",
            err("ERR unsupported unit provided. please use M, KM, FT, MI"),
        ),
        (
            "GEODIST Sicily Palermo Catania km x",
            err("ERR syntax error"),
        ),
        (
            "GEOHASH Sicily Palermo Catania missing",
            array(&[bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), nil()]),
        ),
        (
            "GEOPOS Sicily Palermo missing",
            array(&[
                coords("13.36138933897018433", "38.11555639549629859"),
                Reply::Array(None),
            ]),
        ),
        ("GEOPOS nokey a", array(&[Reply::Array(None)])),
    ]);
}

#[test]
fn scores_no_geoadd_wrote_decode_as_redis_decodes_them() {
    let mut s = Session::new();
    s.run("ZADD weird -1 a 2.5 b inf c");
    s.expect(&[
        (
            "GEOPOS weird a b c",
            array(&[
                coords("180", "85.0511287799999991"),
                coords("-179.99999195337295532", "-85.05112751263942528"),
                coords("-179.99999731779098511", "-85.05112751263942528"),
            ]),
        ),
        (
            "GEOHASH weird a b",
            array(&[bulk("bp05b5048p0"), bulk("00bh0hbj200")]),
        ),
        ("GEODIST weird a b", bulk("18919844.5891")),
    ]);
}

#[test]
fn georadius_finds_sorts_counts_and_describes() {
    let mut s = sicily();
    s.run("GEOADD Sicily 13.583333 37.316667 Agrigento");
    s.expect(&[
        (
            "GEORADIUS Sicily 15 37 200 km",
            bulks(&["Agrigento", "Palermo", "Catania"]),
        ), // in the order the cells are searched
        (
            "GEORADIUS Sicily 15 37 200 km DESC COUNT 1",
            bulks(&["Palermo"]),
        ),
        (
            "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY",
            bulks(&["Agrigento"]),
        ),
        (
            "GEORADIUS Sicily 15 37 100 km WITHDIST WITHHASH WITHCOORD",
            array(&[array(&[
                bulk("Catania"),
                bulk("56.4413"),
                int(3479447370796909),
                coords("15.08726745843887329", "37.50266842333162032"),
            ])]),
        ),
        (
            "GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST",
            array(&[
                array(&[bulk("Agrigento"), bulk("0.0000")]),
                array(&[bulk("Palermo"), bulk("90.9778")]),
            ]),
        ),
        ("GEORADIUSBYMEMBER nokey nomember 100 km", array(&[])),
    ]);
}

#[test]
fn geosearch_by_radius_or_box_from_a_point_or_member() {
    let mut s = sicily();
    s.run("GEOADD Sicily 13.583333 37.316667 Agrigento");
    s.expect(&[
        (
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHDIST",
            array(&[
                array(&[bulk("Palermo"), bulk("0.0000")]),
                array(&[bulk("Agrigento"), bulk("90.9778")]),
                array(&[bulk("Catania"), bulk("166.2742")]),
            ]),
        ),
        (
            "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 100 400 km DESC",
            bulks(&["Agrigento", "Palermo"]),
        ),
    ]);
}

#[test]
fn search_errors_come_in_redis_s_order() {
    let mut s = sicily();
    let cases = [
        ("GEORADIUS Sicily 15 37 200 km ANY", "ERR the ANY argument requires COUNT argument"),
        ("GEORADIUS Sicily 15 37 200 km COUNT 0", "ERR COUNT must be > 0"),
        ("GEORADIUS Sicily 15 37 -1 km", "ERR radius cannot be negative"),
        ("GEORADIUS Sicily 15 37 x km", "ERR need numeric radius"),
        (
            "GEORADIUS Sicily 15 37 100 km WITHDIST STORE dst",
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        ("GEORADIUS_RO Sicily 15 37 200 km STORE dst", "ERR syntax error"),
        ("GEORADIUSBYMEMBER Sicily nomember 100 km", "ERR could not decode requested zset member"),
        ("GEORADIUSBYMEMBER nokey nomember x y BAD", "ERR syntax error"),
        (
            "GEOSEARCH Sicily FROMLONLAT 15 37 COUNT 1",
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
        ),
        (
            "geosearch Sicily BYRADIUS 1 m WITHDIST ASC",
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch",
        ),
        ("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 m", "ERR syntax error"),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 m BYBOX 1 1 m", "ERR syntax error"),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 m", "ERR height or width cannot be negative"),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x m", "ERR need numeric height"),
        (
            "GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
    ];
    for (line, error) in cases {
        assert_eq!(s.run(line), err(error), "{line}");
    }
}

#[test]
fn stores_write_a_sorted_set_by_hash_or_distance() {
    let mut s = sicily();
    s.run("GEOADD Sicily 13.583333 37.316667 Agrigento");
    s.expect(&[
        ("GEORADIUS Sicily 15 37 200 km STORE dst", int(3)),
        (
            "ZRANGE dst 0 -1 WITHSCORES",
            bulks(&[
                "Agrigento",
                "3479030013248308",
                "Palermo",
                "3479099956230698",
                "Catania",
                "3479447370796909",
            ]),
        ),
        (
            "GEOSEARCHSTORE dst3 Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
            int(3),
        ),
        (
            "ZRANGE dst3 0 0 WITHSCORES",
            bulks(&["Catania", "56.441257870158204"]),
        ),
    ]);
    let logged = s.logged("GEOSEARCHSTORE dst3 Sicily FROMLONLAT 0 0 BYRADIUS 1 km");
    assert_eq!(logged, ["DEL dst3"], "an empty result deletes");
    s.expect(&[
        ("GEORADIUS nokey 0 0 1 km STORE dst", int(0)), // a missing source deletes too
        ("EXISTS dst", int(0)),
    ]);
}
