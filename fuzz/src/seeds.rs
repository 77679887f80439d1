//! The committed seed corpus (`fuzz/seeds/<target>/<name>`), made here so
//! that it can be regenerated: `cargo +nightly test` in `fuzz/` checks the
//! files against this code, and rewrites them with `KVSTORE_FUZZ_SEEDS=write`.
//!
//! Each seed is small and shows the fuzzer one interesting shape: valid
//! and broken requests, a valid log, superblocks of both formats; for the
//! engine, whose input is a stream of choices, a few fixed pseudo-random
//! streams of different lengths.

use kvstore::aof::superblock::Superblock;
use kvstore::aof::{encode_record, HEADER};

/// One seed: its target, its file name and its bytes.
pub struct Seed {
    /// The fuzz target it is for.
    pub target: &'static str,
    /// Its file name under `seeds/<target>/`.
    pub name: &'static str,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// Every seed of every target.
pub fn all() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target, name, bytes: Vec<u8>| {
        seeds.push(Seed {
            target,
            name,
            bytes,
        })
    };

    // resp_parser: a limits byte (even: Redis's), a cut count, the cuts
    // (two bytes each), then the stream.
    let parser = |limits: &[u8], cuts: &[u16], stream: &[u8]| {
        let mut bytes = limits.to_vec();
        bytes.push(cuts.len() as u8);
        for cut in cuts {
            bytes.extend(cut.to_be_bytes());
        }
        bytes.extend_from_slice(stream);
        bytes
    };
    let set = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
    add("resp_parser", "array", parser(&[0], &[], set));
    add("resp_parser", "array_cut", parser(&[0], &[3, 9, 20], set));
    add(
        "resp_parser",
        "inline_quotes",
        parser(&[0], &[5], b"PING\r\nSET k \"a\\x00b\" 'c\\'d'\r\nGET k\n"),
    );
    add(
        "resp_parser",
        "empty_requests",
        parser(&[0], &[], b"*0\r\n\r\n  \r\n*-1\r\nPING\r\n"),
    );
    add(
        "resp_parser",
        "small_limits",
        parser(
            &[1, 8, 3, 16],
            &[7],
            b"*2\r\n$3\r\nGET\r\n$9\r\n123456789\r\nGET 1234567890123456\r\n",
        ),
    );
    add(
        "resp_parser",
        "protocol_error",
        parser(&[0], &[], b"*1\r\n$3\r\nGET\r\n*1\r\nx3\r\nfoo\r\n"),
    );

    // command_engine: the input is a stream of choices.
    for (name, len, seed) in [("short", 64, 1), ("medium", 512, 2), ("long", 2048, 3)] {
        add("command_engine", name, pseudo_random(len, seed));
    }

    // log_replay: mode 0 (a raw log), mode 1 (records after a header),
    // modes 2 and 3 (generated commands, then damage).
    let mut log = HEADER.to_vec();
    log.extend(encode_record(&["SET", "k", "v", "PXAT", "1700000005000"]));
    log.extend(encode_record(&[&b"SET"[..], b"bin\r\n\0", &[0xff; 40]]));
    log.extend(encode_record(&["APPEND", "k", "more"]));
    log.extend(encode_record(&["DEL", "k"]));
    add("log_replay", "valid_log", [&[0][..], &log].concat());
    add(
        "log_replay",
        "records",
        [&[1][..], &log[HEADER.len()..]].concat(),
    );
    let torn = &log[..log.len() - 3];
    add("log_replay", "torn_tail", [&[0][..], torn].concat());
    add("log_replay", "damaged", pseudo_random(256, 4));

    // superblock: a capacity and its shift, then each slot: mode 0 (raw
    // bytes, with their length) or another mode (fields, then damage).
    let raw = |bytes: &[u8]| [&[0, bytes.len() as u8][..], bytes].concat();
    let capacity = (64u64 << 20).to_le_bytes();
    let current = Superblock {
        generation: 7,
        extent: kvstore::aof::superblock::half(64 << 20, 1),
        length: 4096,
    };
    let next = current.next(kvstore::aof::superblock::half(64 << 20, 0), 100);
    add(
        "superblock",
        "two_valid",
        [
            &capacity[..],
            &[0],
            &raw(&next.encode()),
            &raw(&current.encode()),
        ]
        .concat(),
    );
    let mut v1 = b"FLKVSB01".to_vec();
    v1.extend(300u64.to_le_bytes());
    let crc = kvstore::aof::crc32c(&v1);
    v1.extend(crc.to_le_bytes());
    add(
        "superblock",
        "old_format",
        [&capacity[..], &[0], &raw(&v1), &raw(&[])].concat(),
    );
    add("superblock", "fields", pseudo_random(64, 5));
    seeds
}

/// `len` seeded pseudo-random bytes: the same every time.
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0; len];
    faultline_rng::Rng::new(seed).fill(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The committed seeds are the ones this code makes; with
    /// `KVSTORE_FUZZ_SEEDS=write` the files are (re)written instead.
    #[test]
    fn committed_seeds_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
        let write = std::env::var("KVSTORE_FUZZ_SEEDS").as_deref() == Ok("write");
        for seed in super::all() {
            let path = root.join(seed.target).join(seed.name);
            if write {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &seed.bytes).unwrap();
            } else {
                let committed = std::fs::read(&path).unwrap_or_else(|e| {
                    panic!(
                        "{}: {e}; write it with KVSTORE_FUZZ_SEEDS=write",
                        path.display()
                    )
                });
                assert!(committed == seed.bytes, "{} is out of date", path.display());
            }
        }
    }
}
