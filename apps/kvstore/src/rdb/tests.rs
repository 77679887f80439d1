//! Payloads of a real redis-server 7.0.15 (`fixtures/redis-7.0.15.txt`:
//! DUMP of keys made by SET, RPUSH, SADD, HSET and ZADD, with
//! `list-compress-depth 1` for `l_comp` and `DEBUG
//! QUICKLIST-PACKED-THRESHOLD 100` for the plain node of `l_plain`) and of
//! the RDB files in Redis's test assets (`fixtures/legacy.txt`: ziplists,
//! zipmap, intsets, text scores), each with the value Redis restored from
//! it (`type:` then the elements in hex: a string's bytes, a list in
//! order, a set's members and a hash's pairs sorted, a sorted set's
//! members and scores as ZRANGE WITHSCORES gives them).

use alloc::string::String;
use alloc::vec::Vec;

use super::*;

const REDIS: &str = include_str!("fixtures/redis-7.0.15.txt");
const LEGACY: &str = include_str!("fixtures/legacy.txt");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// (name, payload, type, elements) of each fixture line.
fn fixtures(text: &str) -> impl Iterator<Item = (&str, Vec<u8>, &str, Vec<Vec<u8>>)> {
    text.lines().filter(|l| !l.starts_with('#')).map(|line| {
        let words: Vec<&str> = line.split(' ').collect();
        let (kind, elements) = words[3].split_once(':').unwrap();
        let elements = elements.split(',').map(unhex).collect();
        (words[0], unhex(words[2]), kind, elements)
    })
}

/// A value's elements, in the order of the fixtures.
fn elements(data: &Data) -> Vec<Vec<u8>> {
    match data {
        Data::String(v) => alloc::vec![v.to_vec()],
        Data::List(l) => l.iter().map(<[u8]>::to_vec).collect(),
        Data::Set(s) => {
            let mut m: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
            m.sort();
            m
        }
        Data::Hash(h) => {
            let mut pairs: Vec<_> = h.iter().collect();
            pairs.sort();
            pairs
                .into_iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect()
        }
        Data::Zset(z) => z
            .iter()
            .flat_map(|(m, s)| [m.to_vec(), alloc::format!("{s}").into_bytes()])
            .collect(),
        Data::Stream(_) => Vec::new(),
    }
}

/// Compares restored elements with Redis's, scores as numbers.
fn same(kind: &str, ours: &[Vec<u8>], redis: &[Vec<u8>]) -> bool {
    if kind != "zset" {
        return ours == redis;
    }
    let number = |b: &[u8]| cursor::parse_double(b).unwrap();
    ours.len() == redis.len()
        && ours
            .chunks(2)
            .zip(redis.chunks(2))
            .all(|(a, b)| a[0] == b[0] && number(&a[1]) == number(&b[1]))
}

#[test]
fn every_payload_of_redis_restores_to_what_redis_restored() {
    let mut seen = String::new();
    for (name, payload, kind, expected) in fixtures(REDIS).chain(fixtures(LEGACY)) {
        let loaded = load(&payload, Limits::default());
        if kind == "stream" {
            assert_eq!(
                loaded,
                Err(LoadError::Unsupported("kvstore does not restore streams"))
            );
            continue;
        }
        let data = loaded.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(data.type_name(), kind, "{name}");
        assert!(same(kind, &elements(&data), &expected), "{name}");
        // And kvstore's own payload of it restores to the same value.
        let again = load(&dump(&data).unwrap(), Limits::default()).unwrap();
        assert_eq!(again, data, "{name} round trip");
        seen.push_str(name);
        seen.push(' ');
    }
    for name in [
        "l_comp",
        "l_plain",
        "set_int64",
        "h_long",
        "z_sl",
        "hash-zipmap/hash",
    ] {
        assert!(seen.contains(name), "{name} was tested");
    }
}

#[test]
fn the_encoding_follows_the_settings() {
    let payload = |name: &str| fixtures(REDIS).find(|f| f.0 == name).unwrap().1;
    let h = load(&payload("h_ht"), Limits::default()).unwrap();
    assert_eq!(h.encoding(), "hashtable", "200 fields are past 128");
    let z = load(&payload("z_lp"), Limits::default()).unwrap();
    assert_eq!(z.encoding(), "listpack");
    let z = load(&payload("z_sl"), Limits::default()).unwrap();
    assert_eq!(z.encoding(), "skiplist");
    let s = load(&payload("set_int16"), Limits::default()).unwrap();
    assert_eq!(s.encoding(), "intset");
    let tight = Limits {
        set_max_ints: 2,
        ..Limits::default()
    };
    assert_eq!(
        load(&payload("set_int16"), tight).unwrap().encoding(),
        "hashtable"
    );
}

#[test]
fn version_and_checksum_are_checked() {
    let (_, good, _, _) = fixtures(REDIS).next().unwrap();
    assert!(load(&good, Limits::default()).is_ok());
    for at in 0..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        assert_eq!(
            load(&bad, Limits::default()),
            Err(LoadError::VersionOrChecksum),
            "a flipped bit at {at}"
        );
    }
    assert_eq!(
        load(&good[..9], Limits::default()),
        Err(LoadError::VersionOrChecksum)
    );
    // Redis 7.0 reads RDB versions up to 10.
    let mut newer = good[..good.len() - 10].to_vec();
    newer.extend_from_slice(&11u16.to_le_bytes());
    let crc = crc64(&newer);
    newer.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        load(&newer, Limits::default()),
        Err(LoadError::VersionOrChecksum)
    );
}

/// `body` as a payload with a correct footer.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

#[test]
fn every_truncation_and_corruption_is_refused_without_panicking() {
    for (name, payload, kind, _) in fixtures(REDIS).chain(fixtures(LEGACY)) {
        let body = &payload[..payload.len() - 10];
        for cut in 0..body.len() {
            let loaded = load(&sealed(&body[..cut]), Limits::default());
            assert!(loaded.is_err(), "{name} cut at {cut}");
        }
        if kind == "stream" || body.len() > 600 {
            continue;
        }
        // Every byte changed to a few other values, checksum made right:
        // whatever comes of it, no panic.
        for at in 0..body.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = body.to_vec();
                bad[at] ^= flip;
                let _ = load(&sealed(&bad), Limits::default());
            }
        }
    }
}

#[test]
fn malformed_values_are_bad_data() {
    let bad = |body: &[u8]| load(&sealed(body), Limits::default());
    assert_eq!(
        bad(&[2, 2, 1, b'a', 1, b'a']),
        Err(LoadError::Bad),
        "a duplicate member"
    );
    assert_eq!(
        bad(&[4, 2, 1, b'f', 1, b'v', 1, b'f', 1, b'w']),
        Err(LoadError::Bad),
        "a duplicate field"
    );
    assert_eq!(bad(&[1, 0]), Err(LoadError::Bad), "an empty list");
    // Bytes after the value are ignored, as in Redis (which RESTOREs 20
    // zero bytes as an empty string: their CRC-64 is 0).
    assert_eq!(bad(&[0, 1, b'v', 0]), Ok(Data::from(b"v".to_vec())));
    assert_eq!(
        load(&[0; 20], Limits::default()),
        Ok(Data::from(Vec::new()))
    );
    assert_eq!(
        bad(&[3, 1, 1, b'm', 253]),
        Err(LoadError::Bad),
        "a NaN score"
    );
    let mut nan = alloc::vec![5, 1, 1, b'm'];
    nan.extend_from_slice(&f64::NAN.to_le_bytes());
    assert_eq!(bad(&nan), Err(LoadError::Bad), "a NaN binary score");
    assert_eq!(bad(&[7]), Err(LoadError::Bad), "a module value");
    assert_eq!(bad(&[20]), Err(LoadError::Bad), "Redis 7.2's set listpack");
    assert_eq!(
        bad(&[18, 1, 3, 1, b'x']),
        Err(LoadError::Bad),
        "no such quicklist node"
    );
    // The suite's hostile length: 2^64 - 9 bytes claimed, none there.
    let huge = [0, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf7];
    assert_eq!(bad(&huge), Err(LoadError::Bad));
}

#[test]
fn dump_writes_the_simple_types() {
    let mut list = List::new();
    list.push(End::Right, b"a".to_vec());
    let payload = dump(&Data::from(list)).unwrap();
    assert_eq!(&payload[..4], [1, 1, 1, b'a']);
    assert_eq!(&payload[4..6], [10, 0], "RDB version 10");
    assert_eq!(payload[6..], crc64(&payload[..6]).to_le_bytes());
    let mut long = alloc::vec![0u8];
    put_string(&mut long, &[b'x'; 20_000]);
    assert_eq!(&long[..6], [0, 0x80, 0, 0, 0x4e, 0x20], "a 32-bit length");
    let stream = Data::from(crate::store::Stream::new());
    assert!(dump(&stream).is_err());
}
