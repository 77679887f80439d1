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
use crate::store::{Stream, StreamId};

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
            let Ok(Data::Stream(stream)) = loaded else {
                panic!("{name}: {loaded:?}");
            };
            let entry = stream.get(StreamId::new(1, 1)).unwrap();
            assert_eq!(entry, [b"f".to_vec(), b"v".to_vec()]);
            assert_eq!((stream.len(), stream.entries_added), (1, 1));
            continue;
        }
        let data = loaded.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(data.type_name(), kind, "{name}");
        assert!(same(kind, &elements(&data), &expected), "{name}");
        // And kvstore's own payload of it restores to the same value.
        let again = load(&dump(&data), Limits::default()).unwrap();
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
    let payload = dump(&Data::from(list));
    assert_eq!(&payload[..4], [1, 1, 1, b'a']);
    assert_eq!(&payload[4..6], [10, 0], "RDB version 10");
    assert_eq!(payload[6..], crc64(&payload[..6]).to_le_bytes());
    let mut long = alloc::vec![0u8];
    put_string(&mut long, &[b'x'; 20_000]);
    assert_eq!(&long[..6], [0, 0x80, 0, 0, 0x4e, 0x20], "a 32-bit length");
}

const STREAM: &str = include_str!("fixtures/stream.txt");

#[test]
fn a_stream_of_redis_with_groups_restores_and_round_trips() {
    let payload = unhex(STREAM.lines().nth(1).unwrap());
    let Ok(Data::Stream(stream)) = load(&payload, Limits::default()) else {
        panic!("the stream loads");
    };
    assert_eq!(stream.len(), 148);
    assert_eq!(stream.node_count(), 2, "100 entries a node");
    assert_eq!(stream.last_id, StreamId::new(150, 0));
    assert_eq!(stream.max_deleted, StreamId::new(7, 1));
    assert_eq!(stream.entries_added, 150);
    assert_eq!(stream.first_id(), StreamId::new(1, 1));
    let fields = |id: StreamId| stream.get(id).unwrap().to_vec();
    let words = |w: &[&str]| w.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(
        fields(StreamId::new(1, 1)),
        words(&["f", "v1", "n", "1000"])
    );
    assert_eq!(fields(StreamId::new(3, 1)), words(&["other", "x3"]));
    assert_eq!(
        fields(StreamId::new(149, 1)),
        words(&["f", "v149", "n", "149000"])
    );
    assert!(stream.get(StreamId::new(5, 1)).is_none(), "deleted");
    let g1 = &stream.groups[&b"g1".to_vec()];
    assert_eq!((g1.last_id, g1.entries_read), (StreamId::new(6, 0), None));
    let pending: Vec<(StreamId, &[u8])> = g1
        .pending
        .iter()
        .map(|(id, p)| (*id, p.consumer.as_slice()))
        .collect();
    assert_eq!(
        pending,
        [
            (StreamId::new(1, 1), &b"alice"[..]),
            (StreamId::new(3, 1), b"alice"),
            (StreamId::new(4, 0), b"bob"),
            (StreamId::new(6, 0), b"bob"),
        ]
    );
    assert!(g1.pending.values().all(|p| p.deliveries == 1));
    assert_eq!(g1.consumers[&b"bob".to_vec()].pending.len(), 2);
    let g2 = &stream.groups[&b"g2".to_vec()];
    assert_eq!((g2.last_id, g2.pending.len()), (StreamId::new(150, 0), 0));
    // kvstore's payload of it gives it back, times included.
    let data = Data::Stream(stream.clone());
    let Ok(Data::Stream(again)) = load(&dump(&data), Limits::default()) else {
        panic!("the dump loads");
    };
    assert_eq!(*again, *stream);
    let seen = |s: &Stream| {
        s.groups
            .values()
            .flat_map(|g| g.consumers.values().map(|c| c.seen_ms))
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(&again), seen(&stream));
    let delivered = |s: &Stream| {
        s.groups
            .values()
            .flat_map(|g| g.pending.values().map(|p| p.delivered_ms))
            .collect::<Vec<_>>()
    };
    assert_eq!(delivered(&again), delivered(&stream));
}

#[test]
fn a_stream_as_redis_5_wrote_it_restores() {
    // The payload of unit/type/stream-cgroups' legacy test: XADD x 1-0
    // .. 6-0 data a..f, XDEL x 3-0, groups g1 and g2 at 0, XREADGROUP
    // GROUP g1 c11 COUNT 4, XTRIM x MAXLEN = 2 (RDB version 9).
    let hex = concat!(
        "0f011000000000000000010000000000000000c3404a405716570000002300020104010101846461",
        "746105000103010020010381610204200a0001400a0062600a0002400a0063600a4022018164200a",
        "4039200a0065600a0005400a0066200a00ff02060002026731050004000000000000000100000000",
        "000000003ef783437a01000001000000000000000200000000000000003ef783437a010000010000",
        "00000000000400000000000000003ef783437a01000001000000000000000500000000000000003e",
        "f783437a0100000101036331313ef783437a01000004000000000000000100000000000000000000",
        "00000000000200000000000000000000000000000004000000000000000000000000000000050000",
        "0000000000000267320000000009003d52ef6867521dfa",
    );
    let Ok(Data::Stream(stream)) = load(&unhex(hex), Limits::default()) else {
        panic!("the legacy stream loads");
    };
    assert_eq!(stream.len(), 2);
    assert_eq!(stream.entries_added, 2);
    assert_eq!(stream.max_deleted, StreamId::ZERO);
    let g1 = &stream.groups[&b"g1".to_vec()];
    let g2 = &stream.groups[&b"g2".to_vec()];
    assert_eq!((g1.entries_read, stream.lag(g1)), (Some(1), Some(1)));
    assert_eq!((g2.entries_read, stream.lag(g2)), (Some(0), Some(2)));
    assert_eq!(g1.pending.len(), 4);
}

#[test]
fn a_broken_stream_is_bad_data() {
    let payload = unhex(STREAM.lines().nth(1).unwrap());
    let body = &payload[..payload.len() - 10];
    for cut in (0..body.len()).step_by(7) {
        assert!(
            load(&sealed(&body[..cut]), Limits::default()).is_err(),
            "cut at {cut}"
        );
    }
    // The groups part (after the nodes): every byte flipped, no panic.
    for at in body.len() - 300..body.len() {
        let mut bad = body.to_vec();
        bad[at] ^= 0x5a;
        let _ = load(&sealed(&bad), Limits::default());
    }
}
