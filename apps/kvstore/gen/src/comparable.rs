//! Commands whose replies Redis must match: the differential test's
//! stream (`image/tests/kvstore_vs_redis.rs`). It uses every command
//! kvstore supports, with edge-case arguments (empty, huge and negative
//! numbers, malformed integers, binary and large values, expiry times in
//! the past and the future), and says with each how its replies compare
//! ([`Check`]).
//!
//! Where kvstore deliberately differs from Redis, the stream leaves the
//! command out or the comparison looks only at what must agree; each case
//! says why (see [`Check`] and [`Stream::command`]). Relative expiries are
//! long (100 s and more) or already past, so nothing expires while the
//! test runs, and `TTL`/`PTTL` are compared with a tolerance.

use crate::choices::Choices;

mod families;

/// How two replies to one command are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Byte for byte.
    Exact,
    /// Integers that may differ by the time between the two servers'
    /// answers, in the reply's unit (`TTL`: seconds, `PTTL`: ms); the
    /// codes -1 and -2 exactly.
    Ttl(i64),
    /// The same elements in any order (`KEYS`: Redis lists keys in its
    /// hash table's order, kvstore in its own).
    AnyOrder,
    /// Errors exactly; otherwise a whole scan from cursor 0 with the same
    /// options must find the same keys (cursors are positions in each
    /// server's own hash table, so batches and cursors differ).
    Scan,
    /// The same kind of reply only: `INFO` describes each server
    /// (versions, memory, uptime), `CLIENT ID` is each server's count of
    /// connections.
    Kind,
}

/// Database indexes: some of the 16 both servers have, and not ones.
const DBS: &[&str] = &["0", "1", "2", "15", "16", "-1", "x", "99999999999"];

/// Integers and near-integers that Redis's strict parser sorts out.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "9223372036854775",
    "01",
    "-0",
    "+1",
    " 1",
    "1.5",
    "1e3",
    "abc",
    "",
];

/// The random command stream.
pub struct Stream<'c> {
    rng: &'c mut dyn Choices,
    /// Unix time in seconds when the test started: absolute expiry times
    /// are drawn around it.
    start_s: u64,
    /// A `MULTI` was sent and no `EXEC` or `DISCARD` since: only commands
    /// whose replies compare exactly are queued, so that `EXEC`'s array
    /// does too.
    in_multi: bool,
}

impl<'c> Stream<'c> {
    /// A stream whose choices come from `rng`, its absolute expiry times
    /// drawn around `start_s` (Unix seconds: the servers' clocks).
    pub fn new(rng: &'c mut dyn Choices, start_s: u64) -> Stream<'c> {
        Stream {
            rng,
            start_s,
            in_multi: false,
        }
    }
}

impl Stream<'_> {
    fn key(&mut self) -> Vec<u8> {
        match self.rng.below(20) {
            0 => vec![b'L'; 300],
            1 => b"bin\0\r\n\xff".to_vec(),
            _ => self
                .rng
                .pick(&["k", "k2", "n", "", "{k}*?[", "\u{20ac}", "counter"])
                .into(),
        }
    }

    /// A value: empty, text, a number, binary, or large (16 KiB and more:
    /// kvstore writes those to its log from their own memory).
    fn value(&mut self) -> Vec<u8> {
        match self.rng.below(12) {
            0 => Vec::new(),
            1..=3 => format!("v{}", self.rng.below(1000)).into_bytes(),
            4..=6 => self.rng.pick(NUMBERS).into(),
            7 | 8 => (0..self.rng.below(40))
                .map(|_| self.rng.u64() as u8)
                .collect(),
            9 => b"\0\r\n\xff\xfe".to_vec(),
            10 => {
                let len = self.rng.pick(&[16_383, 16_384, 16_385, 65_539, 300_001]);
                let seed = self.rng.u64();
                (0..len)
                    .map(|i| ((i as u64 ^ seed).wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect()
            }
            _ => self.rng.pick(&["1", "-5", "9223372036854775806"]).into(),
        }
    }

    /// A script on one key and one value: commands through `redis.call`
    /// and `redis.pcall` with their replies converted both ways, Lua's
    /// numbers and strings, and the errors of scripts and of their
    /// commands (whose texts name the script by its SHA-1).
    /// A TTL read through a script is compared as TTL is (the two servers
    /// answer at different moments).
    fn script(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let body = self.rng.pick(&[
            "return redis.call('SET', KEYS[1], ARGV[1])",
            "return redis.call('GET', KEYS[1])",
            "return redis.pcall('INCRBY', KEYS[1], ARGV[1])",
            "return redis.call('INCRBY', KEYS[1], ARGV[1])",
            "return redis.call('APPEND', KEYS[1], ARGV[1])",
            "return {redis.call('EXISTS', KEYS[1]), redis.call('TYPE', KEYS[1]), tonumber(ARGV[1]), ARGV[1] == ''}",
            "return redis.call('RPUSH', KEYS[1], ARGV[1], ARGV[1])",
            "return redis.call('LRANGE', KEYS[1], 0, -1)",
            "return redis.pcall('HGETALL', KEYS[1])",
            "return redis.call('DEL', KEYS[1])",
            "local v = redis.call('INCR', KEYS[1]) return {v, v * 1.5, tostring(v / 3), v % 7 == 0}",
            "return redis.call('nosuch', KEYS[1])",
            "return redis.call('GET', KEYS[1], ARGV[1])",
            "error('failed at ' .. #ARGV[1])",
            "return undefined_global",
            "new_global = 1",
            "return string.format('%5.1f|%d|%g|%x', tonumber(ARGV[1]) or 0.25, #ARGV[1], #ARGV[1] / 7, #ARGV[1])",
            "return redis.call('TTL', KEYS[1])",
            "return redis.status_reply(redis.sha1hex(ARGV[1]))",
            "return redis.call('SELECT', '1') and redis.call('SET', KEYS[1], ARGV[1])",
            "return 1 +",
        ]);
        args.push(body.into());
        args.push(b"1".to_vec());
        args.push(self.key());
        args.push(self.value());
        if body.contains("'TTL'") {
            Check::Ttl(5)
        } else {
            Check::Exact
        }
    }

    /// A relative expiry in seconds: long enough never to be reached while
    /// the test runs, already past, or malformed.
    fn seconds(&mut self) -> String {
        self.rng
            .pick(&[
                "100",
                "1000",
                "86400",
                "0",
                "-1",
                "-100",
                "9223372036854775807",
                "9223372036854775",
                "abc",
                "1.5",
            ])
            .into()
    }

    /// An absolute expiry in Unix seconds: far enough from every relative
    /// one (start + 100..700 s, + 1000..1600 s, + 86400.. s) that `GT` and
    /// `LT` decide the same on both servers, or past, or malformed.
    fn unix_seconds(&mut self) -> String {
        let s = self.start_s as i64;
        match self.rng.below(9) {
            0 => (s + 5_000).to_string(),
            1 => (s + 40_000).to_string(),
            2 => (s + 500_000).to_string(),
            3 => (s - 3_600).to_string(),
            4 => "1".into(),
            5 => "-1".into(),
            6 => "0".into(),
            7 => "9223372036854775807".into(),
            _ => "x".into(),
        }
    }

    /// [`seconds`](Stream::seconds) or [`unix_seconds`](Stream::unix_seconds)
    /// in milliseconds, plus a few (but a relative 0 stays 0: a few
    /// milliseconds from now would race); as they are if that overflows.
    fn millis(&mut self, absolute: bool) -> String {
        let s = if absolute {
            self.unix_seconds()
        } else {
            self.seconds()
        };
        let extra = if absolute || s != "0" {
            self.rng.below(1000) as i64
        } else {
            0
        };
        match s
            .parse::<i64>()
            .ok()
            .and_then(|n| n.checked_mul(1000)?.checked_add(extra))
        {
            Some(ms) => ms.to_string(),
            None => s,
        }
    }

    fn pattern(&mut self) -> Vec<u8> {
        self.rng
            .pick(&[
                "*", "k*", "?", "[a-k]*", "\\{*", "*[", "k[^2]", "", "bin*", "L*L",
            ])
            .into()
    }

    /// The next command and how its replies are compared.
    ///
    /// Left out, deliberately:
    /// - `QUIT`: it ends the connection (sent once, at the end);
    /// - `BGREWRITEAOF`: its reply depends on whether a rewrite is still
    ///   running, which differs by timing (and Redis runs without a log);
    /// - `CLIENT SETINFO`: Redis 7.2's, absent from Debian's Redis 7.0;
    /// - `CONFIG SET` and `CONFIG GET` of most parameters: the servers'
    ///   settings differ (ports, `appendonly`), some are fixed in kvstore
    ///   (`maxmemory-policy`), and kvstore's `maxmemory` applies to an
    ///   estimate of its data, not to the process, so `-OOM` comes at
    ///   other sizes (a few settings both take alike are compared);
    /// - `COMMAND`: kvstore describes its own, smaller command set;
    /// - `INCRBYFLOAT` past a double's range or precision: Redis computes
    ///   in the x86 80-bit long double and prints it whole (`1e400` is a
    ///   400-digit number there, and sums of tenths drift in its last
    ///   digits); kvstore adds plain decimals exactly and the rest as
    ///   doubles, so `INCRBYFLOAT` works on a key of its own with binary
    ///   fractions, which all three represent exactly;
    /// - Redis commands kvstore does not have (`HGET`, `LPUSH`, ...): it
    ///   answers them as unknown; unknown commands are sent by names
    ///   neither server knows, with printable arguments.
    pub fn command(&mut self) -> (Vec<Vec<u8>>, Check) {
        let words = |list: &[&str]| -> Vec<Vec<u8>> {
            list.iter().map(|w| w.as_bytes().to_vec()).collect()
        };
        let mut check = Check::Exact;
        let name = self.rng.pick(&[
            "GET",
            "GET",
            "SET",
            "SET",
            "SET",
            "GETSET",
            "SETNX",
            "INCR",
            "DECR",
            "INCRBY",
            "DECRBY",
            "APPEND",
            "STRLEN",
            "MGET",
            "MSET",
            "DEL",
            "EXISTS",
            "TYPE",
            "KEYS",
            "SCAN",
            "DBSIZE",
            "FLUSHALL",
            "EXPIRE",
            "PEXPIRE",
            "EXPIREAT",
            "PEXPIREAT",
            "TTL",
            "PTTL",
            "PERSIST",
            "PING",
            "ECHO",
            "SELECT",
            "SETEX",
            "GETDEL",
            "GETEX",
            "INCRBYFLOAT",
            "MSETNX",
            "GETRANGE",
            "SETRANGE",
            "RENAME",
            "COPY",
            "MOVE",
            "TOUCH",
            "SWAPDB",
            "AUTH",
            "MULTI",
            "CLIENT",
            "INFO",
            "CONFIG",
            "NOSUCH",
            "EVAL",
            "EVAL",
            "HASH",
            "HASH",
            "LIST",
            "LIST",
            "SET-TYPE",
            "SET-TYPE",
            "ZSET",
            "ZSET",
            "ZSET",
            "STREAM",
            "STREAM",
            "STREAM",
            "HLL",
            "HLL",
            "BITS",
            "BITS",
            "GEO",
            "GEO",
            "GEO",
        ]);
        let mut args = vec![name.as_bytes().to_vec()];
        match name {
            "HASH" => check = self.hash_command(&mut args),
            "LIST" => check = self.list_command(&mut args),
            "SET-TYPE" => check = self.set_command(&mut args),
            "ZSET" => check = self.zset_command(&mut args),
            "STREAM" => check = self.stream_command(&mut args),
            "HLL" => check = self.hll_command(&mut args),
            "BITS" => check = self.bit_command(&mut args),
            "GEO" => check = self.geo_command(&mut args),
            "GET" | "INCR" | "DECR" | "STRLEN" | "TYPE" | "PERSIST" => args.push(self.key()),
            "TTL" | "PTTL" => {
                args.push(self.key());
                check = Check::Ttl(if name == "TTL" { 5 } else { 5_000 });
            }
            "SET" => {
                args.extend([self.key(), self.value()]);
                for _ in 0..self.rng.below(4) {
                    let option = self.rng.pick(&[
                        "NX", "XX", "GET", "KEEPTTL", "EX", "PX", "EXAT", "PXAT", "nx", "get",
                        "BAD",
                    ]);
                    args.push(option.into());
                    match option {
                        "EX" => args.push(self.seconds().into()),
                        "PX" => args.push(self.millis(false).into()),
                        "EXAT" => args.push(self.unix_seconds().into()),
                        "PXAT" => args.push(self.millis(true).into()),
                        _ => {}
                    }
                }
            }
            "GETSET" | "SETNX" | "APPEND" => args.extend([self.key(), self.value()]),
            "SETEX" => {
                args[0] = self.rng.pick(&["SETEX", "PSETEX"]).into();
                let time = match args[0].as_slice() {
                    b"SETEX" => self.seconds(),
                    _ => self.millis(false),
                };
                args.extend([self.key(), time.into_bytes(), self.value()]);
            }
            "GETDEL" => args.push(self.key()),
            "GETEX" => {
                args.push(self.key());
                match self.rng.below(5) {
                    0 => args.extend([b"EX".to_vec(), self.seconds().into_bytes()]),
                    1 => args.extend([b"PXAT".to_vec(), self.millis(true).into_bytes()]),
                    2 => args.push(b"PERSIST".to_vec()),
                    3 => args.push(b"BAD".to_vec()),
                    _ => {}
                }
            }
            // A key of its own, which no other command names: its value
            // stays a small number that a double holds exactly.
            "INCRBYFLOAT" => args.extend([
                b"float".to_vec(),
                self.rng
                    .pick(&[
                        "1",
                        "0.5",
                        "-2.25",
                        "3e2",
                        "abc",
                        " 1",
                        "10.5",
                        "-0.125",
                        "inf",
                        "-Infinity",
                        "nan",
                    ])
                    .into(),
            ]),
            "MSETNX" => {
                for _ in 0..1 + self.rng.below(3) {
                    args.extend([self.key(), self.value()]);
                }
            }
            "GETRANGE" => {
                let offsets = ["0", "1", "-1", "-3", "5", "100", "-100", "x"];
                args.extend([
                    self.key(),
                    self.rng.pick(&offsets).into(),
                    self.rng.pick(&offsets).into(),
                ]);
            }
            "SETRANGE" => args.extend([
                self.key(),
                self.rng.pick(&["0", "1", "7", "-1", "x"]).into(),
                self.value(),
            ]),
            "RENAME" => {
                args[0] = self.rng.pick(&["RENAME", "RENAMENX"]).into();
                args.extend([self.key(), self.key()]);
            }
            "COPY" => {
                args.extend([self.key(), self.key()]);
                if self.rng.chance(3) {
                    args.push(b"REPLACE".to_vec());
                }
                if self.rng.chance(30) {
                    args.push(b"DB".to_vec());
                    args.push(self.rng.pick(DBS).into());
                }
            }
            "MOVE" => args.extend([self.key(), self.rng.pick(DBS).into()]),
            "SWAPDB" => {
                // Rare: it moves every key of two databases at once.
                if !self.rng.chance(20) {
                    return self.command();
                }
                args.extend([self.rng.pick(DBS).into(), self.rng.pick(DBS).into()]);
            }
            "AUTH" => {
                // No password is set: AUTH <password> is refused, the
                // default user takes any, other users none.
                let user = self.rng.pick(&["default", "someone", "DEFAULT"]);
                match self.rng.below(3) {
                    0 => args.push(b"secret".to_vec()),
                    _ => args.extend([user.into(), b"secret".to_vec()]),
                }
            }
            "TOUCH" => {
                for _ in 0..1 + self.rng.below(3) {
                    args.push(self.key());
                }
            }
            "MULTI" => {
                // A whole transaction: queued commands, then EXEC or DISCARD.
                args[0] = self
                    .rng
                    .pick(&["MULTI", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH"])
                    .into();
                if args[0] == b"WATCH" {
                    args.push(self.key());
                }
            }
            "INCRBY" | "DECRBY" => args.extend([self.key(), self.rng.pick(NUMBERS).into()]),
            "MGET" | "DEL" | "EXISTS" => {
                for _ in 0..1 + self.rng.below(4) {
                    args.push(self.key());
                }
            }
            "MSET" => {
                for _ in 0..1 + self.rng.below(3) {
                    args.extend([self.key(), self.value()]);
                }
            }
            "KEYS" => {
                args.push(self.pattern());
                check = Check::AnyOrder;
            }
            "SCAN" => {
                // Not "" or "-1": Redis 7.0 reads cursors with C's
                // strtoul, which takes those as 0 and 2^64 - 1; kvstore
                // wants plain digits.
                args.push(
                    self.rng
                        .pick(&["0", "0", "0", "abc", "1x", "18446744073709551616"])
                        .into(),
                );
                for _ in 0..self.rng.below(3) {
                    match self.rng.below(4) {
                        0 => {
                            args.push(b"MATCH".to_vec());
                            args.push(self.pattern());
                        }
                        1 => args.extend(words(&[
                            "COUNT",
                            self.rng.pick(&["1", "3", "1000", "0", "-1", "x"]),
                        ])),
                        2 => args.extend(words(&[
                            "TYPE",
                            self.rng.pick(&["string", "hash", "list", "set", "zset"]),
                        ])),
                        _ => args.push(b"BOGUS".to_vec()),
                    }
                }
                check = Check::Scan;
            }
            "DBSIZE" => {}
            "FLUSHALL" => {
                // Rare, so that keys pile up between flushes.
                if !self.rng.chance(10) {
                    return self.command();
                }
                args[0] = self.rng.pick(&["FLUSHALL", "FLUSHDB"]).into();
                if self.rng.chance(50) {
                    args.push(self.rng.pick(&["ASYNC", "SYNC", "LATER"]).into());
                }
            }
            "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => {
                let absolute = name.ends_with("AT");
                let time = match (name.starts_with('P'), absolute) {
                    (false, false) => self.seconds(),
                    (false, true) => self.unix_seconds(),
                    (true, _) => self.millis(absolute),
                };
                args.extend([self.key(), time.into_bytes()]);
                // GT and LT compare with the key's current expiry: with
                // relative times that is a race between two clocks.
                let conditions: &[&str] = if absolute {
                    &["NX", "XX", "GT", "LT", "gt", "EX"]
                } else {
                    &["NX", "XX", "nx", "EX"]
                };
                for _ in 0..self.rng.below(3) {
                    args.push(self.rng.pick(conditions).into());
                }
            }
            "PING" => {
                for _ in 0..self.rng.below(3) {
                    args.push(self.value());
                }
            }
            "ECHO" => args.push(self.value()),
            "EVAL" => check = self.script(&mut args),
            "SELECT" => args.push(
                self.rng
                    .pick(&["0", "1", "15", "-1", "16", "abc", "99999999999", ""])
                    .into(),
            ),
            "CLIENT" => match self.rng.below(4) {
                0 => args.extend(words(&[
                    "SETNAME",
                    self.rng.pick(&["fuzz", "", "has space", "new\nline", "x"]),
                ])),
                1 => args.push(b"GETNAME".to_vec()),
                2 => {
                    args.push(b"ID".to_vec());
                    check = Check::Kind;
                }
                _ => args.push(b"NOSUCH".to_vec()),
            },
            "INFO" => {
                if self.rng.chance(50) {
                    args.push(
                        self.rng
                            .pick(&["memory", "keyspace", "server", "nosuch"])
                            .into(),
                    );
                }
                check = Check::Kind;
            }
            "CONFIG" => match self.rng.below(4) {
                0 => args.extend(words(&[
                    "GET",
                    self.rng.pick(&["maxmemory", "maxmemory-policy", "nosuch"]),
                ])),
                1 => args.push(b"RESETSTAT".to_vec()),
                2 => {
                    // Settings both servers take alike, and bad ones.
                    args.push(b"SET".to_vec());
                    for _ in 0..1 + self.rng.below(2) {
                        let (name, value) = self.rng.pick(&[
                            ("maxclients", "10000"),
                            ("MaxClients", "10000"),
                            ("maxclients", "lots"),
                            ("maxclients", "0"),
                            ("maxclients", "-1"),
                            ("appendfsync", "everysec"),
                            ("appendfsync", "sometimes"),
                            ("auto-aof-rewrite-percentage", "100"),
                            ("auto-aof-rewrite-percentage", "-1"),
                            ("proto-max-bulk-len", "536870912"),
                            ("proto-max-bulk-len", "100"),
                            ("proto-max-bulk-len", "lots"),
                            ("databases", "3"),
                            ("hll-sparse-max-bytes", "3000"),
                            ("hll-sparse-max-bytes", "200"),
                            ("NoSuch", "1"),
                        ]);
                        args.extend(words(&[name, value]));
                    }
                    if self.rng.chance(10) {
                        args.push(b"maxclients".to_vec()); // a name without a value
                    }
                }
                _ => args.push(b"NOSUCH".to_vec()),
            },
            _ => {
                // An unknown command, with printable arguments (Redis
                // quotes arguments in its error with C's "%s", which
                // stops at a NUL byte; kvstore shows them whole).
                args[0] = self.rng.pick(&["NOSUCH", "nosuchcmd", "x"]).into();
                for _ in 0..self.rng.below(3) {
                    args.push(format!("a{}", self.rng.below(100)).into_bytes());
                }
            }
        }
        // Now and then an argument too many or too few.
        if self.rng.chance(4) {
            if self.rng.chance(50) {
                args.push(b"extra".to_vec());
            } else if args.len() > 1 {
                args.pop();
            }
        }
        // Names in any case.
        if self.rng.chance(20) {
            args[0] = args[0].to_ascii_lowercase();
        }
        if self.in_multi && !matches!(check, Check::Exact) {
            return self.command();
        }
        match args[0].to_ascii_uppercase().as_slice() {
            b"MULTI" => self.in_multi = true,
            b"EXEC" | b"DISCARD" => self.in_multi = false,
            _ => {}
        }
        (args, check)
    }
}

/// Members, fields and elements: a few short ones (so that commands meet
/// each other's), integers (so that sets are intsets), and now and then
/// any value.
const MEMBERS: &[&str] = &["a", "b", "c", "", "1", "2", "-3", "10", "x y"];

/// Scores and score bounds, with the edge cases Redis sorts out.
const SCORES: &[&str] = &[
    "0", "1", "2", "-1", "2.5", "1e3", "-0", "inf", "-inf", "+inf", "nan", "x", "", "(1", "(inf",
    "1e400",
];

/// Indexes and counts for ranges.
const INDEXES: &[&str] = &["0", "1", "-1", "2", "-2", "5", "-100", "100", "x", ""];

impl Stream<'_> {
    fn member(&mut self) -> Vec<u8> {
        if self.rng.chance(8) {
            self.value()
        } else {
            self.rng.pick(MEMBERS).into()
        }
    }

    fn members(&mut self, args: &mut Vec<Vec<u8>>, at_least: usize) {
        for _ in 0..at_least + self.rng.below(4) {
            let m = self.member();
            args.push(m);
        }
    }

    fn keys(&mut self, args: &mut Vec<Vec<u8>>, numkeys: bool) {
        let n = 1 + self.rng.below(3);
        if numkeys {
            let told = if self.rng.chance(5) {
                self.rng.pick(INDEXES).to_string()
            } else {
                n.to_string()
            };
            args.push(told.into_bytes());
        }
        for _ in 0..n {
            let k = self.key();
            args.push(k);
        }
    }

    fn index(&mut self) -> Vec<u8> {
        self.rng.pick(INDEXES).into()
    }

    fn score(&mut self) -> Vec<u8> {
        self.rng.pick(SCORES).into()
    }

    /// A hash command; HRANDFIELD compares by kind (it picks at random).
    fn hash_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "HSET",
            "HSET",
            "HSETNX",
            "HGET",
            "HMGET",
            "HDEL",
            "HLEN",
            "HEXISTS",
            "HSTRLEN",
            "HINCRBY",
            "HINCRBYFLOAT",
            "HKEYS",
            "HVALS",
            "HGETALL",
            "HRANDFIELD",
            "HMSET",
        ]);
        args[0] = name.into();
        args.push(self.key());
        match name {
            "HSET" | "HMSET" => {
                for _ in 0..1 + self.rng.below(3) {
                    let (f, v) = (self.member(), self.value());
                    args.extend([f, v]);
                }
            }
            "HSETNX" => {
                let (f, v) = (self.member(), self.value());
                args.extend([f, v]);
            }
            "HGET" | "HEXISTS" | "HSTRLEN" => args.push(self.member()),
            "HMGET" | "HDEL" => self.members(args, 1),
            "HINCRBY" => {
                let (f, n) = (self.member(), self.rng.pick(NUMBERS).into());
                args.extend([f, n]);
            }
            "HINCRBYFLOAT" => {
                let f = self.member();
                let by = self.rng.pick(&["1", "0.1", "-2.5", "1e3", "inf", "x", "3"]);
                args.extend([f, by.into()]);
            }
            "HKEYS" | "HVALS" | "HGETALL" => return Check::AnyOrder,
            "HRANDFIELD" => {
                if self.rng.chance(50) {
                    args.push(self.index());
                }
                return Check::Kind;
            }
            _ => {}
        }
        Check::Exact
    }

    /// A list command (no blocking ones: a blocked client would stall
    /// the stream).
    fn list_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "LPUSH",
            "RPUSH",
            "LPUSH",
            "RPUSH",
            "LPUSHX",
            "RPUSHX",
            "LPOP",
            "RPOP",
            "LLEN",
            "LRANGE",
            "LINDEX",
            "LSET",
            "LINSERT",
            "LREM",
            "LTRIM",
            "LPOS",
            "LMOVE",
            "RPOPLPUSH",
            "LMPOP",
        ]);
        args[0] = name.into();
        match name {
            "LMPOP" => {
                self.keys(args, true);
                args.push(self.rng.pick(&["LEFT", "RIGHT", "UP"]).into());
                if self.rng.chance(50) {
                    args.extend([b"COUNT".to_vec(), self.index()]);
                }
                return Check::Exact;
            }
            "LMOVE" | "RPOPLPUSH" => {
                let (a, b) = (self.key(), self.key());
                args.extend([a, b]);
                if name == "LMOVE" {
                    for _ in 0..2 {
                        args.push(self.rng.pick(&["LEFT", "RIGHT", "left", "MIDDLE"]).into());
                    }
                }
                return Check::Exact;
            }
            _ => {}
        }
        args.push(self.key());
        match name {
            "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => self.members(args, 1),
            "LPOP" | "RPOP" if self.rng.chance(40) => args.push(self.index()),
            "LRANGE" | "LTRIM" => {
                let (a, b) = (self.index(), self.index());
                args.extend([a, b]);
            }
            "LINDEX" => args.push(self.index()),
            "LSET" => {
                let (i, v) = (self.index(), self.member());
                args.extend([i, v]);
            }
            "LINSERT" => {
                args.push(self.rng.pick(&["BEFORE", "AFTER", "after", "NEAR"]).into());
                let (p, v) = (self.member(), self.member());
                args.extend([p, v]);
            }
            "LREM" => {
                let (n, v) = (self.index(), self.member());
                args.extend([n, v]);
            }
            "LPOS" => {
                args.push(self.member());
                for _ in 0..self.rng.below(3) {
                    let option = self.rng.pick(&["RANK", "COUNT", "MAXLEN", "BAD"]);
                    args.push(option.into());
                    if option != "BAD" {
                        args.push(self.index());
                    }
                }
            }
            _ => {}
        }
        Check::Exact
    }

    /// A set command; SRANDMEMBER compares by kind (it picks at random),
    /// and SPOP is left out (the two servers would take different
    /// members, and their data would part).
    fn set_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "SADD",
            "SADD",
            "SADD",
            "SREM",
            "SCARD",
            "SISMEMBER",
            "SMISMEMBER",
            "SMEMBERS",
            "SMOVE",
            "SINTER",
            "SUNION",
            "SDIFF",
            "SINTERSTORE",
            "SUNIONSTORE",
            "SDIFFSTORE",
            "SINTERCARD",
            "SRANDMEMBER",
        ]);
        args[0] = name.into();
        match name {
            "SINTER" | "SUNION" | "SDIFF" => {
                self.keys(args, false);
                return Check::AnyOrder;
            }
            "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" => {
                args.push(self.key());
                self.keys(args, false);
                return Check::Exact;
            }
            "SINTERCARD" => {
                self.keys(args, true);
                if self.rng.chance(40) {
                    args.extend([b"LIMIT".to_vec(), self.index()]);
                }
                return Check::Exact;
            }
            "SMOVE" => {
                let (a, b, m) = (self.key(), self.key(), self.member());
                args.extend([a, b, m]);
                return Check::Exact;
            }
            _ => {}
        }
        args.push(self.key());
        match name {
            "SADD" | "SREM" | "SMISMEMBER" => self.members(args, 1),
            "SISMEMBER" => args.push(self.member()),
            "SMEMBERS" => return Check::AnyOrder,
            "SRANDMEMBER" => {
                if self.rng.chance(50) {
                    args.push(self.index());
                }
                return Check::Kind;
            }
            _ => {}
        }
        Check::Exact
    }

    /// A stream command. IDs are explicit (`*` takes each server's own
    /// clock) and nothing answers with times: no `BLOCK`, `XPENDING` in
    /// its summary form only, no `XINFO`.
    fn stream_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "XADD",
            "XADD",
            "XADD",
            "XLEN",
            "XRANGE",
            "XREVRANGE",
            "XDEL",
            "XTRIM",
            "XREAD",
            "XGROUP",
            "XREADGROUP",
            "XREADGROUP",
            "XACK",
            "XPENDING",
        ]);
        args[0] = name.into();
        let id = |s: &mut Self| -> Vec<u8> {
            match s.rng.below(4) {
                0 => s
                    .rng
                    .pick(&["-", "+", "0", "0-0", "x", "(3", "1-*", "$", ">"])
                    .into(),
                1 => format!("{}-*", s.rng.below(60)).into_bytes(),
                _ => format!("{}-{}", s.rng.below(60), s.rng.below(3)).into_bytes(),
            }
        };
        let group = |s: &mut Self| -> Vec<u8> { s.rng.pick(&["g", "h"]).into() };
        let consumer = |s: &mut Self| -> Vec<u8> { s.rng.pick(&["c", "d"]).into() };
        let count =
            |s: &mut Self| -> Vec<u8> { s.rng.pick(&["0", "1", "2", "5", "-1", "x"]).into() };
        let trim = |s: &mut Self, args: &mut Vec<Vec<u8>>| {
            let how = s.rng.pick(&["MAXLEN", "MINID", "maxlen"]);
            args.push(how.into());
            if s.rng.chance(50) {
                args.push(s.rng.pick(&["=", "~"]).into());
            }
            args.push(if how == "MINID" { id(s) } else { count(s) });
            if s.rng.chance(20) {
                let limit = count(s);
                args.extend([b"LIMIT".to_vec(), limit]);
            }
        };
        match name {
            "XADD" => {
                args.push(self.key());
                if self.rng.chance(20) {
                    args.push(b"NOMKSTREAM".to_vec());
                }
                if self.rng.chance(30) {
                    trim(self, args);
                }
                let at = id(self);
                args.push(at);
                for _ in 0..1 + self.rng.below(2) {
                    let (f, v) = (self.member(), self.value());
                    args.extend([f, v]);
                }
            }
            "XLEN" => args.push(self.key()),
            "XRANGE" | "XREVRANGE" => {
                let (k, a, b) = (self.key(), id(self), id(self));
                args.extend([k, a, b]);
                if self.rng.chance(40) {
                    let n = count(self);
                    args.extend([b"COUNT".to_vec(), n]);
                }
            }
            "XDEL" => {
                args.push(self.key());
                for _ in 0..1 + self.rng.below(2) {
                    let at = id(self);
                    args.push(at);
                }
            }
            "XTRIM" => {
                args.push(self.key());
                trim(self, args);
            }
            "XREAD" | "XREADGROUP" => {
                if name == "XREADGROUP" {
                    let (g, c) = (group(self), consumer(self));
                    args.extend([b"GROUP".to_vec(), g, c]);
                    if self.rng.chance(20) {
                        args.push(b"NOACK".to_vec());
                    }
                }
                if self.rng.chance(40) {
                    let n = count(self);
                    args.extend([b"COUNT".to_vec(), n]);
                }
                args.push(b"STREAMS".to_vec());
                let n = 1 + self.rng.below(2);
                for _ in 0..n {
                    args.push(self.key());
                }
                for _ in 0..n {
                    let at = match self.rng.chance(50) {
                        true => {
                            if name == "XREAD" {
                                b"$".to_vec()
                            } else {
                                b">".to_vec()
                            }
                        }
                        false => id(self),
                    };
                    args.push(at);
                }
            }
            "XGROUP" => {
                let sub = self.rng.pick(&[
                    "CREATE",
                    "CREATE",
                    "SETID",
                    "DESTROY",
                    "CREATECONSUMER",
                    "DELCONSUMER",
                ]);
                let (k, g) = (self.key(), group(self));
                args.extend([sub.into(), k, g]);
                match sub {
                    "CREATE" | "SETID" => {
                        let at = if self.rng.chance(30) {
                            b"$".to_vec()
                        } else {
                            id(self)
                        };
                        args.push(at);
                        if sub == "CREATE" && self.rng.chance(50) {
                            args.push(b"MKSTREAM".to_vec());
                        }
                        if self.rng.chance(20) {
                            let n = count(self);
                            args.extend([b"ENTRIESREAD".to_vec(), n]);
                        }
                    }
                    "CREATECONSUMER" | "DELCONSUMER" => args.push(consumer(self)),
                    _ => {}
                }
            }
            "XACK" => {
                let (k, g) = (self.key(), group(self));
                args.extend([k, g]);
                for _ in 0..1 + self.rng.below(2) {
                    let at = id(self);
                    args.push(at);
                }
            }
            _ => {
                // XPENDING, the summary: no idle times.
                let (k, g) = (self.key(), group(self));
                args.extend([k, g]);
            }
        }
        Check::Exact
    }

    /// A sorted-set command; ZRANDMEMBER compares by kind.
    fn zset_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "ZADD",
            "ZADD",
            "ZADD",
            "ZINCRBY",
            "ZREM",
            "ZCARD",
            "ZSCORE",
            "ZMSCORE",
            "ZRANK",
            "ZREVRANK",
            "ZCOUNT",
            "ZLEXCOUNT",
            "ZRANGE",
            "ZRANGE",
            "ZREVRANGE",
            "ZRANGEBYSCORE",
            "ZREVRANGEBYSCORE",
            "ZRANGEBYLEX",
            "ZREMRANGEBYRANK",
            "ZREMRANGEBYSCORE",
            "ZREMRANGEBYLEX",
            "ZPOPMIN",
            "ZPOPMAX",
            "ZUNION",
            "ZINTER",
            "ZDIFF",
            "ZUNIONSTORE",
            "ZINTERSTORE",
            "ZDIFFSTORE",
            "ZINTERCARD",
            "ZRANGESTORE",
            "ZMPOP",
            "ZRANDMEMBER",
        ]);
        args[0] = name.into();
        let lex = |s: &mut Self| -> Vec<u8> {
            s.rng
                .pick(&["-", "+", "[a", "(b", "[", "c", "(", "[1", "(x y"])
                .into()
        };
        match name {
            "ZUNION" | "ZINTER" | "ZDIFF" | "ZUNIONSTORE" | "ZINTERSTORE" | "ZDIFFSTORE" => {
                if name.ends_with("STORE") {
                    args.push(self.key());
                }
                self.keys(args, true);
                if name != "ZDIFF" && name != "ZDIFFSTORE" && self.rng.chance(40) {
                    args.push(b"WEIGHTS".to_vec());
                    for _ in 0..1 + self.rng.below(3) {
                        args.push(self.rng.pick(&["1", "2", "-1", "0.5", "inf", "x"]).into());
                    }
                }
                if name != "ZDIFF" && name != "ZDIFFSTORE" && self.rng.chance(30) {
                    args.push(b"AGGREGATE".to_vec());
                    args.push(self.rng.pick(&["SUM", "MIN", "MAX", "max", "AVG"]).into());
                }
                if !name.ends_with("STORE") && self.rng.chance(50) {
                    args.push(b"WITHSCORES".to_vec());
                }
                return Check::Exact;
            }
            "ZINTERCARD" => {
                self.keys(args, true);
                if self.rng.chance(40) {
                    args.extend([b"LIMIT".to_vec(), self.index()]);
                }
                return Check::Exact;
            }
            "ZMPOP" => {
                self.keys(args, true);
                args.push(self.rng.pick(&["MIN", "MAX", "min", "MID"]).into());
                if self.rng.chance(50) {
                    args.extend([b"COUNT".to_vec(), self.index()]);
                }
                return Check::Exact;
            }
            "ZRANGESTORE" => {
                let (d, k) = (self.key(), self.key());
                args.extend([d, k]);
                let (a, b) = (self.index(), self.index());
                args.extend([a, b]);
                return Check::Exact;
            }
            _ => {}
        }
        args.push(self.key());
        match name {
            "ZADD" => {
                for _ in 0..self.rng.below(3) {
                    let flag = self.rng.pick(&["NX", "XX", "GT", "LT", "CH", "INCR", "nx"]);
                    args.push(flag.into());
                }
                for _ in 0..1 + self.rng.below(3) {
                    let (score, m) = (self.score(), self.member());
                    args.extend([score, m]);
                }
            }
            "ZINCRBY" => {
                let (by, m) = (self.score(), self.member());
                args.extend([by, m]);
            }
            "ZREM" | "ZMSCORE" => self.members(args, 1),
            "ZSCORE" | "ZRANK" | "ZREVRANK" => args.push(self.member()),
            "ZCOUNT" | "ZRANGEBYSCORE" | "ZREVRANGEBYSCORE" | "ZREMRANGEBYSCORE" => {
                let (a, b) = (self.score(), self.score());
                args.extend([a, b]);
                if name.contains("RANGEBY") && !name.starts_with("ZREM") {
                    if self.rng.chance(40) {
                        args.push(b"WITHSCORES".to_vec());
                    }
                    if self.rng.chance(30) {
                        let (o, c) = (self.index(), self.index());
                        args.extend([b"LIMIT".to_vec(), o, c]);
                    }
                }
            }
            "ZLEXCOUNT" | "ZRANGEBYLEX" | "ZREMRANGEBYLEX" => {
                let (a, b) = (lex(self), lex(self));
                args.extend([a, b]);
            }
            "ZRANGE" => {
                match self.rng.below(3) {
                    0 => {
                        let (a, b) = (self.index(), self.index());
                        args.extend([a, b]);
                    }
                    1 => {
                        let (a, b) = (self.score(), self.score());
                        args.extend([a, b, b"BYSCORE".to_vec()]);
                    }
                    _ => {
                        let (a, b) = (lex(self), lex(self));
                        args.extend([a, b, b"BYLEX".to_vec()]);
                    }
                }
                if self.rng.chance(30) {
                    args.push(b"REV".to_vec());
                }
                if self.rng.chance(30) {
                    let (o, c) = (self.index(), self.index());
                    args.extend([b"LIMIT".to_vec(), o, c]);
                }
                if self.rng.chance(40) {
                    args.push(b"WITHSCORES".to_vec());
                }
            }
            "ZREVRANGE" | "ZREMRANGEBYRANK" => {
                let (a, b) = (self.index(), self.index());
                args.extend([a, b]);
                if name == "ZREVRANGE" && self.rng.chance(40) {
                    args.push(b"WITHSCORES".to_vec());
                }
            }
            "ZPOPMIN" | "ZPOPMAX" if self.rng.chance(50) => args.push(self.index()),
            "ZRANDMEMBER" => {
                if self.rng.chance(50) {
                    args.push(self.index());
                }
                return Check::Kind;
            }
            _ => {}
        }
        Check::Exact
    }
}
