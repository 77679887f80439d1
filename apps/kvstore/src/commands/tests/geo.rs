//! The geospatial commands. The replies expected here are what Redis
//! 7.0.15 answered to the same commands (its documentation's Sicily).
use super::*;

fn sicily() -> Session {
    Session::after("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania")
}

#[test]
fn geoadd_stores_redis_s_scores_and_is_a_zadd() {
    let mut s = Session::new();
    assert_eq!(
        s.logged("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"),
        ["ZADD Sicily 3479099956230698 Palermo 3479447370796909 Catania"]
    );
    s.transcript(
        r#"
        > ZSCORE Sicily Palermo
        "3479099956230698"
        > GEOADD Sicily CH 13.361389 38.2 Palermo 1 1 New
        (integer) 2
        > GEOADD Sicily XX 13.361389 38.115556 Palermo 2 2 Newer
        (integer) 0
        > EXISTS Newer
        (integer) 0
        > ZCARD Sicily
        (integer) 3
    "#,
    );
}

#[test]
fn geoadd_errors() {
    transcript(
        r#"
        > GEOADD k 200 10 x
        (error) ERR invalid longitude,latitude pair 200.000000,10.000000
        > GEOADD k 10 86 x
        (error) ERR invalid longitude,latitude pair 10.000000,86.000000
        > GEOADD k abc 10 x
        (error) ERR value is not a valid float
        > GEOADD k NX XX 10 10 x
        (error) ERR syntax error
        > GEOADD k 10 10 x 1
        (error) ERR syntax error
        > EXISTS k
        (integer) 0
    "#,
    );
}

#[test]
fn geodist_geohash_and_geopos_read_points() {
    let mut s = sicily();
    s.transcript(
        r#"
        > GEODIST Sicily Palermo Catania
        "166274.1516"
        > GEODIST Sicily Palermo Catania km
        "166.2742"
        > GEODIST Sicily Palermo Catania MI
        "103.3182"
        > GEODIST Sicily Palermo Catania ft
        "545518.8700"
        > GEODIST Sicily Palermo missing
        (nil)
        > GEODIST nokey a b
        (nil)
        > GEODIST Sicily Palermo Catania yd
        (error) ERR unsupported unit provided. please use M, KM, FT, MI
        > GEODIST Sicily Palermo Catania km x
        (error) ERR syntax error
        > GEOHASH Sicily Palermo Catania missing
        1) "sqc8b49rny0"
        2) "sqdtr74hyu0"
        3) (nil)
        > GEOPOS Sicily Palermo missing
        1) 1) "13.36138933897018433"
           2) "38.11555639549629859"
        2) (nil array)
        > GEOPOS nokey a
        1) (nil array)
    "#,
    );
}

#[test]
fn scores_no_geoadd_wrote_decode_as_redis_decodes_them() {
    transcript(
        r#"
        > ZADD weird -1 a 2.5 b inf c
        (integer) 3
        > GEOPOS weird a b c
        1) 1) "180"
           2) "85.0511287799999991"
        2) 1) "-179.99999195337295532"
           2) "-85.05112751263942528"
        3) 1) "-179.99999731779098511"
           2) "-85.05112751263942528"
        > GEOHASH weird a b
        1) "bp05b5048p0"
        2) "00bh0hbj200"
        > GEODIST weird a b
        "18919844.5891"
    "#,
    );
}

#[test]
fn georadius_finds_sorts_counts_and_describes() {
    let mut s = sicily();
    s.transcript(
        r#"
        > GEOADD Sicily 13.583333 37.316667 Agrigento
        (integer) 1
        // in the order the cells are searched
        > GEORADIUS Sicily 15 37 200 km
        1) "Agrigento"
        2) "Palermo"
        3) "Catania"
        > GEORADIUS Sicily 15 37 200 km DESC COUNT 1
        1) "Palermo"
        > GEORADIUS Sicily 15 37 200 km COUNT 1 ANY
        1) "Agrigento"
        > GEORADIUS Sicily 15 37 100 km WITHDIST WITHHASH WITHCOORD
        1) 1) "Catania"
           2) "56.4413"
           3) (integer) 3479447370796909
           4) 1) "15.08726745843887329"
              2) "37.50266842333162032"
        > GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST
        1) 1) "Agrigento"
           2) "0.0000"
        2) 1) "Palermo"
           2) "90.9778"
        > GEORADIUSBYMEMBER nokey nomember 100 km
        (empty array)
    "#,
    );
}

#[test]
fn geosearch_by_radius_or_box_from_a_point_or_member() {
    let mut s = sicily();
    s.transcript(
        r#"
        > GEOADD Sicily 13.583333 37.316667 Agrigento
        (integer) 1
        > GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHDIST
        1) 1) "Palermo"
           2) "0.0000"
        2) 1) "Agrigento"
           2) "90.9778"
        3) 1) "Catania"
           2) "166.2742"
        > GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 100 400 km DESC
        1) "Agrigento"
        2) "Palermo"
    "#,
    );
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
    s.transcript(
        r#"
        > GEOADD Sicily 13.583333 37.316667 Agrigento
        (integer) 1
        > GEORADIUS Sicily 15 37 200 km STORE dst
        (integer) 3
        > ZRANGE dst 0 -1 WITHSCORES
        1) "Agrigento"
        2) "3479030013248308"
        3) "Palermo"
        4) "3479099956230698"
        5) "Catania"
        6) "3479447370796909"
        > GEOSEARCHSTORE dst3 Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
        (integer) 3
        > ZRANGE dst3 0 0 WITHSCORES
        1) "Catania"
        2) "56.441257870158204"
    "#,
    );
    let logged = s.logged("GEOSEARCHSTORE dst3 Sicily FROMLONLAT 0 0 BYRADIUS 1 km");
    assert_eq!(logged, ["DEL dst3"], "an empty result deletes");
    s.transcript(
        r#"
        // a missing source deletes too
        > GEORADIUS nokey 0 0 1 km STORE dst
        (integer) 0
        > EXISTS dst
        (integer) 0
    "#,
    );
}
