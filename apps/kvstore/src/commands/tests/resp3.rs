//! RESP3 (`HELLO 3`): the reply types Redis 7.0 gives a RESP3 client, as
//! they go on the wire, and the switch back with `HELLO 2`.

use super::Session;

/// A RESP3 session: `HELLO 3` sent.
fn resp3() -> Session {
    let mut s = Session::new();
    s.run("HELLO 3");
    s
}

#[test]
fn hello_3_switches_the_connection_and_answers_a_map() {
    let mut s = Session::new();
    let hello = s.wire("HELLO 3");
    assert!(
        hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n"),
        "{hello:?}"
    );
    assert!(
        hello.contains("$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n"),
        "{hello:?}"
    );
    assert!(hello.ends_with("$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"), "{hello:?}");
    assert_eq!(s.wire("GET missing"), "_\r\n");
    // HELLO without a version answers in the protocol spoken.
    assert!(s.wire("HELLO").starts_with("%7\r\n"));
    let back = s.wire("HELLO 2");
    assert!(back.starts_with("*14\r\n$6\r\nserver\r\n"), "{back:?}");
    assert!(back.contains("$5\r\nproto\r\n:2\r\n"), "{back:?}");
    assert_eq!(s.wire("GET missing"), "$-1\r\n");
    // A refused HELLO leaves the protocol alone.
    s.run("HELLO 3");
    assert!(s.wire("HELLO 4").starts_with("-NOPROTO"));
    assert_eq!(s.wire("GET missing"), "_\r\n");
}

#[test]
fn reset_goes_back_to_resp2() {
    let mut s = resp3();
    assert_eq!(s.wire("RESET"), "+RESET\r\n");
    assert_eq!(s.wire("GET missing"), "$-1\r\n");
}

#[test]
fn both_nulls_are_one_null() {
    let mut s = resp3();
    assert_eq!(s.wire("LPOP missing 2"), "_\r\n");
    assert_eq!(s.wire("ZMPOP 1 missing MIN"), "_\r\n");
    assert_eq!(s.wire("HGET missing f"), "_\r\n");
}

#[test]
fn hashes_and_config_are_maps() {
    let mut s = resp3();
    s.run("HSET h a 1 b 2");
    assert_eq!(
        s.wire("HGETALL h"),
        "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(s.wire("HGETALL missing"), "%0\r\n");
    assert_eq!(
        s.wire("CONFIG GET maxmemory"),
        "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
    );
    s.run("HSET one f v");
    assert_eq!(
        s.wire("HRANDFIELD one 1 WITHVALUES"),
        "*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(s.wire("HRANDFIELD one 1"), "*1\r\n$1\r\nf\r\n");
    assert_eq!(s.wire("COMMAND DOCS"), "%0\r\n");
    s.run("MSET a ohmytext b mynewtext");
    assert_eq!(
        s.wire("LCS a b IDX MINMATCHLEN 4"),
        "%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n"
    );
}

#[test]
fn set_commands_answer_sets() {
    let mut s = resp3();
    s.run("SADD s a");
    s.run("SADD t a");
    assert_eq!(s.wire("SMEMBERS s"), "~1\r\n$1\r\na\r\n");
    assert_eq!(s.wire("SMEMBERS missing"), "~0\r\n");
    assert_eq!(s.wire("SINTER s t"), "~1\r\n$1\r\na\r\n");
    assert_eq!(s.wire("SUNION s t"), "~1\r\n$1\r\na\r\n");
    assert_eq!(s.wire("SDIFF s t"), "~0\r\n");
    assert_eq!(s.wire("SPOP s 5"), "~1\r\n$1\r\na\r\n");
    assert_eq!(s.wire("SPOP missing 5"), "~0\r\n");
    // SRANDMEMBER's picks may repeat: an array.
    assert_eq!(s.wire("SRANDMEMBER t -2"), "*2\r\n$1\r\na\r\n$1\r\na\r\n");
    // SMISMEMBER answers integers, not booleans, in Redis 7.0.
    assert_eq!(s.wire("SMISMEMBER t a b"), "*2\r\n:1\r\n:0\r\n");
}

#[test]
fn scores_are_doubles_and_withscores_pairs() {
    let mut s = resp3();
    s.run("ZADD z 1.5 a 3 b");
    assert_eq!(s.wire("ZSCORE z a"), ",1.5\r\n");
    assert_eq!(s.wire("ZSCORE z nope"), "_\r\n");
    assert_eq!(s.wire("ZMSCORE z b nope"), "*2\r\n,3\r\n_\r\n");
    assert_eq!(s.wire("ZINCRBY z 1 a"), ",2.5\r\n");
    assert_eq!(s.wire("ZADD z INCR 1 a"), ",3.5\r\n");
    assert_eq!(
        s.wire("ZRANGE z 0 -1 WITHSCORES"),
        "*2\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\na\r\n,3.5\r\n"
    );
    assert_eq!(s.wire("ZRANGE z 0 0"), "*1\r\n$1\r\nb\r\n");
    assert_eq!(
        s.wire("ZUNION 1 z WITHSCORES"),
        "*2\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\na\r\n,3.5\r\n"
    );
    // A scan's batch is strings only.
    assert_eq!(
        s.wire("ZSCAN z 0"),
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\nb\r\n$1\r\n3\r\n$1\r\na\r\n$3\r\n3.5\r\n"
    );
    // Without a count, one flat pair; with one, an array of pairs.
    assert_eq!(s.wire("ZPOPMIN z"), "*2\r\n$1\r\nb\r\n,3\r\n");
    s.run("ZADD z 4 c");
    assert_eq!(s.wire("ZPOPMAX z 1"), "*1\r\n*2\r\n$1\r\nc\r\n,4\r\n");
    assert_eq!(
        s.wire("ZMPOP 1 z MIN"),
        "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n,3.5\r\n"
    );
    s.run("ZADD z 1e300 big -inf low");
    assert_eq!(
        s.wire("BZPOPMIN z 0"),
        "*3\r\n$1\r\nz\r\n$3\r\nlow\r\n,-inf\r\n"
    );
    assert_eq!(s.wire("ZSCORE z big"), ",1.0000000000000001e+300\r\n");
    // INCRBYFLOAT answers a bulk string in RESP3 too.
    assert_eq!(s.wire("INCRBYFLOAT f 1.5"), "$3\r\n1.5\r\n");
}

#[test]
fn the_same_replies_keep_their_resp2_shapes() {
    let mut s = Session::new();
    s.run("ZADD z 1.5 a");
    s.run("HSET h f v");
    s.run("SADD s m");
    assert_eq!(s.wire("ZSCORE z a"), "$3\r\n1.5\r\n");
    assert_eq!(
        s.wire("ZRANGE z 0 -1 WITHSCORES"),
        "*2\r\n$1\r\na\r\n$3\r\n1.5\r\n"
    );
    assert_eq!(s.wire("HGETALL h"), "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    assert_eq!(s.wire("SMEMBERS s"), "*1\r\n$1\r\nm\r\n");
    assert!(s.wire("INFO server").starts_with("$"));
    assert!(s
        .wire("SUBSCRIBE c")
        .starts_with("*3\r\n$9\r\nsubscribe\r\n"));
}

#[test]
fn text_for_humans_is_verbatim() {
    let mut s = resp3();
    let info = s.wire("INFO server");
    assert!(info.starts_with('='), "{info:?}");
    let (len, rest) = info[1..].split_once("\r\n").unwrap();
    assert!(rest.starts_with("txt:# Server\r\n"), "{rest:?}");
    assert_eq!(len.parse::<usize>().unwrap() + 2, rest.len());
    s.engine
        .clients
        .connected(7, "127.0.0.1:5000".into(), s.now);
    s.run("PING");
    let line = s.wire("CLIENT INFO");
    assert!(line.starts_with('='), "{line:?}");
    assert!(line.contains("txt:id=7 "), "{line:?}");
    assert!(line.ends_with(" resp=3\n\r\n"), "{line:?}");
    assert!(s.wire("CLIENT LIST").contains("txt:id=7 "));
}

#[test]
fn pubsub_confirmations_are_pushes_and_other_commands_run() {
    let mut s = resp3();
    assert_eq!(
        s.wire("SUBSCRIBE a b"),
        ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"
    );
    // RESP2 allows only the pub/sub commands here; RESP3 anything.
    assert_eq!(s.wire("SET k v"), "+OK\r\n");
    assert_eq!(s.wire("PING"), "+PONG\r\n");
    assert_eq!(
        s.wire("PUNSUBSCRIBE"),
        ">3\r\n$12\r\npunsubscribe\r\n_\r\n:2\r\n"
    );
}

// Expected texts: redis-server 7.0.15 after `HELLO 3`.
#[test]
fn shard_confirmations_are_pushes_too() {
    let mut s = resp3();
    assert_eq!(
        s.wire("SSUBSCRIBE a b"),
        ">3\r\n$10\r\nssubscribe\r\n$1\r\na\r\n:1\r\n>3\r\n$10\r\nssubscribe\r\n$1\r\nb\r\n:2\r\n"
    );
    assert_eq!(
        s.wire("SUBSCRIBE c"),
        ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
    );
    assert_eq!(s.wire("GET k"), "_\r\n");
    assert_eq!(s.wire("PING"), "+PONG\r\n");
    assert_eq!(
        s.wire("SUNSUBSCRIBE a"),
        ">3\r\n$12\r\nsunsubscribe\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        s.wire("SUNSUBSCRIBE"),
        ">3\r\n$12\r\nsunsubscribe\r\n$1\r\nb\r\n:0\r\n"
    );
    assert_eq!(
        s.wire("SUNSUBSCRIBE"),
        ">3\r\n$12\r\nsunsubscribe\r\n_\r\n:0\r\n"
    );
}
