//! Random HyperLogLog, bit and GEO commands with edge-case arguments,
//! mixed with strings and sorted sets at the same keys: no command panics,
//! and the log of what they did replays to the same dataset (under a
//! lower `proto-max-bulk-len`, as a restart may bring).
use super::*;
use faultline_rng::Rng;

/// One random command line.
fn command(rng: &mut Rng) -> String {
    let pick = |rng: &mut Rng, items: &[&str]| items[rng.index(items.len())].to_string();
    // Keys of each family's own, and a few every family meets.
    let shared = ["s", "h1", "b1", "g1"];
    let keys = |rng: &mut Rng, own: [&str; 3]| match rng.chance(15) {
        true => pick(rng, &shared),
        false => pick(rng, &own),
    };
    let hll = |rng: &mut Rng| keys(rng, ["h1", "h2", "h3"]);
    let bits = |rng: &mut Rng| keys(rng, ["b1", "b2", "b3"]);
    let geo = |rng: &mut Rng| keys(rng, ["g1", "g2", "g3"]);
    let number = |rng: &mut Rng| {
        pick(
            rng,
            &[
                "0",
                "1",
                "-1",
                "7",
                "63",
                "64",
                "1000",
                "-9223372036854775808",
                "9223372036854775807",
                "x",
                "#3",
                "#-1",
            ],
        )
    };
    let coordinate = |rng: &mut Rng| {
        pick(
            rng,
            &[
                "0",
                "13.5",
                "-180",
                "180",
                "85.05112878",
                "-85.1",
                "inf",
                "x",
                "37.25",
            ],
        )
    };
    match rng.index(16) {
        0 => format!(
            "PFADD {} {} {} e{}",
            hll(rng),
            hll(rng),
            number(rng),
            rng.below(5000)
        ),
        1 => format!("PFCOUNT {} {}", hll(rng), hll(rng)),
        2 => format!("PFMERGE {} {} {}", hll(rng), hll(rng), hll(rng)),
        3 => format!(
            "BITOP {} {} {} {}",
            pick(rng, &["AND", "OR", "XOR", "NOT"]),
            bits(rng),
            bits(rng),
            bits(rng)
        ),
        4 => format!(
            "BITPOS {} {} {} {} {}",
            bits(rng),
            pick(rng, &["0", "1"]),
            number(rng),
            number(rng),
            pick(rng, &["BIT", "BYTE"])
        ),
        5 | 6 => format!(
            "BITFIELD {} OVERFLOW {} {} {} {} {} GET {} {}",
            bits(rng),
            pick(rng, &["WRAP", "SAT", "FAIL"]),
            pick(rng, &["SET", "INCRBY"]),
            pick(rng, &["i1", "u7", "i8", "u63", "i64", "i65"]),
            number(rng),
            number(rng),
            pick(rng, &["i64", "u1", "i13"]),
            number(rng)
        ),
        7 | 8 => format!(
            "GEOADD {} {} {} m{}",
            geo(rng),
            coordinate(rng),
            coordinate(rng),
            rng.below(20)
        ),
        9 => format!(
            "GEODIST {} m{} m{} km",
            geo(rng),
            rng.below(20),
            rng.below(20)
        ),
        10 => format!("GEOPOS {} m{} x", geo(rng), rng.below(20)),
        11 => format!(
            "GEOSEARCH {} FROMLONLAT {} {} BYRADIUS {} km WITHCOORD WITHDIST WITHHASH COUNT {}",
            geo(rng),
            coordinate(rng),
            coordinate(rng),
            pick(rng, &["0", "10", "1000", "inf"]),
            pick(rng, &["1", "3", "100"])
        ),
        12 => format!(
            "GEORADIUSBYMEMBER {} m{} {} m STOREDIST {}",
            geo(rng),
            rng.below(20),
            pick(rng, &["0", "100000", "1e7"]),
            geo(rng)
        ),
        13 => format!(
            "GEOSEARCHSTORE {} {} FROMMEMBER m{} BYBOX 500 500 km",
            pick(rng, &shared),
            geo(rng),
            rng.below(20)
        ),
        14 => format!(
            "ZADD {} {} m{}",
            geo(rng),
            pick(rng, &["-1", "2.5", "inf", "3479099956230698"]),
            rng.below(20)
        ),
        _ => format!(
            "SETRANGE {} {} {}",
            geo(rng),
            pick(rng, &["0", "3", "16", "200"]),
            pick(rng, &["HYLL", "x", "\"\\x01\\x00\""])
        ),
    }
}

#[test]
fn random_family_commands_never_panic_and_replay_to_the_same_data() {
    for seed in 1..=4u64 {
        let mut rng = Rng::new(seed);
        let mut s = Session::new();
        if seed % 2 == 0 {
            s.run("CONFIG SET hll-sparse-max-bytes 200");
        }
        let mut log = crate::aof::HEADER.to_vec();
        // Replies that were not errors, per family: the stream must reach
        // each family's working paths, not only its errors.
        let mut answered = [0usize; 3];
        for _ in 0..1500 {
            let line = command(&mut rng);
            let out = s.exec(&line);
            let family = ["PF", "BIT", "GEO"]
                .iter()
                .position(|p| line.starts_with(p));
            if let (Some(family), false) = (family, out.reply.is_error()) {
                answered[family] += 1;
            }
            log.extend(out.effects.to_bytes());
        }
        assert!(
            answered.iter().all(|&n| n > 10),
            "seed {seed}: {answered:?}"
        );
        let config = Config {
            proto_max_bulk_len: 1 << 20,
            ..Config::default()
        };
        let loaded = load_with(config, &log, s.now);
        assert_eq!(entries(&loaded), entries(&s.engine), "seed {seed}");
    }
}
