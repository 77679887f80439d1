//! RESP3 (`HELLO 3`): the reply types Redis 7.0 gives a RESP3 client, as
//! they go on the wire, and the switch back with `HELLO 2`.

use super::Session;

/// A RESP3 session: `HELLO 3` sent.
fn resp3() -> Session {
    Session::after("HELLO 3")
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
    s.wire_transcript(
        r#"
        > GET missing
        _
    "#,
    );
    // HELLO without a version answers in the protocol spoken.
    assert!(s.wire("HELLO").starts_with("%7\r\n"));
    let back = s.wire("HELLO 2");
    assert!(back.starts_with("*14\r\n$6\r\nserver\r\n"), "{back:?}");
    assert!(back.contains("$5\r\nproto\r\n:2\r\n"), "{back:?}");
    s.wire_transcript(
        r#"
        > GET missing
        $-1
    "#,
    );
    // A refused HELLO leaves the protocol alone.
    s.run("HELLO 3");
    assert!(s.wire("HELLO 4").starts_with("-NOPROTO"));
    s.wire_transcript(
        r#"
        > GET missing
        _
    "#,
    );
}

#[test]
fn reset_goes_back_to_resp2() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > RESET
        +RESET
        > GET missing
        $-1
    "#,
    );
}

#[test]
fn both_nulls_are_one_null() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > LPOP missing 2
        _
        > ZMPOP 1 missing MIN
        _
        > HGET missing f
        _
    "#,
    );
}

#[test]
fn hashes_and_config_are_maps() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > HSET h a 1 b 2
        :2
        > HGETALL h
        %2
        $1
        a
        $1
        1
        $1
        b
        $1
        2
        > HGETALL missing
        %0
        > CONFIG GET maxmemory
        %1
        $9
        maxmemory
        $1
        0
        > HSET one f v
        :1
        > HRANDFIELD one 1 WITHVALUES
        *1
        *2
        $1
        f
        $1
        v
        > HRANDFIELD one 1
        *1
        $1
        f
        > COMMAND DOCS
        %0
        > MSET a ohmytext b mynewtext
        +OK
        > LCS a b IDX MINMATCHLEN 4
        %2
        $7
        matches
        *1
        *2
        *2
        :4
        :7
        *2
        :5
        :8
        $3
        len
        :6
    "#,
    );
}

#[test]
fn set_commands_answer_sets() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > SADD s a
        :1
        > SADD t a
        :1
        > SMEMBERS s
        ~1
        $1
        a
        > SMEMBERS missing
        ~0
        > SINTER s t
        ~1
        $1
        a
        > SUNION s t
        ~1
        $1
        a
        > SDIFF s t
        ~0
        > SPOP s 5
        ~1
        $1
        a
        > SPOP missing 5
        ~0
        // SRANDMEMBER's picks may repeat: an array.
        > SRANDMEMBER t -2
        *2
        $1
        a
        $1
        a
        // SMISMEMBER answers integers, not booleans, in Redis 7.0.
        > SMISMEMBER t a b
        *2
        :1
        :0
    "#,
    );
}

#[test]
fn scores_are_doubles_and_withscores_pairs() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > ZADD z 1.5 a 3 b
        :2
        > ZSCORE z a
        ,1.5
        > ZSCORE z nope
        _
        > ZMSCORE z b nope
        *2
        ,3
        _
        > ZINCRBY z 1 a
        ,2.5
        > ZADD z INCR 1 a
        ,3.5
        > ZRANGE z 0 -1 WITHSCORES
        *2
        *2
        $1
        b
        ,3
        *2
        $1
        a
        ,3.5
        > ZRANGE z 0 0
        *1
        $1
        b
        > ZUNION 1 z WITHSCORES
        *2
        *2
        $1
        b
        ,3
        *2
        $1
        a
        ,3.5
        // A scan's batch is strings only.
        > ZSCAN z 0
        *2
        $1
        0
        *4
        $1
        b
        $1
        3
        $1
        a
        $3
        3.5
        // Without a count, one flat pair; with one, an array of pairs.
        > ZPOPMIN z
        *2
        $1
        b
        ,3
        > ZADD z 4 c
        :1
        > ZPOPMAX z 1
        *1
        *2
        $1
        c
        ,4
        > ZMPOP 1 z MIN
        *2
        $1
        z
        *1
        *2
        $1
        a
        ,3.5
        > ZADD z 1e300 big -inf low
        :2
        > BZPOPMIN z 0
        *3
        $1
        z
        $3
        low
        ,-inf
        > ZSCORE z big
        ,1.0000000000000001e+300
        // INCRBYFLOAT answers a bulk string in RESP3 too.
        > INCRBYFLOAT f 1.5
        $3
        1.5
    "#,
    );
}

#[test]
fn the_same_replies_keep_their_resp2_shapes() {
    let mut s = Session::new();
    s.wire_transcript(
        r#"
        > ZADD z 1.5 a
        :1
        > HSET h f v
        :1
        > SADD s m
        :1
        > ZSCORE z a
        $3
        1.5
        > ZRANGE z 0 -1 WITHSCORES
        *2
        $1
        a
        $3
        1.5
        > HGETALL h
        *2
        $1
        f
        $1
        v
        > SMEMBERS s
        *1
        $1
        m
    "#,
    );
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
    s.wire_transcript(
        r#"
        > SUBSCRIBE a b
        >3
        $9
        subscribe
        $1
        a
        :1
        >3
        $9
        subscribe
        $1
        b
        :2
        // RESP2 allows only the pub/sub commands here; RESP3 anything.
        > SET k v
        +OK
        > PING
        +PONG
        > PUNSUBSCRIBE
        >3
        $12
        punsubscribe
        _
        :2
    "#,
    );
}

// Expected texts: redis-server 7.0.15 after `HELLO 3`.
#[test]
fn shard_confirmations_are_pushes_too() {
    let mut s = resp3();
    s.wire_transcript(
        r#"
        > SSUBSCRIBE a b
        >3
        $10
        ssubscribe
        $1
        a
        :1
        >3
        $10
        ssubscribe
        $1
        b
        :2
        > SUBSCRIBE c
        >3
        $9
        subscribe
        $1
        c
        :1
        > GET k
        _
        > PING
        +PONG
        > SUNSUBSCRIBE a
        >3
        $12
        sunsubscribe
        $1
        a
        :1
        > SUNSUBSCRIBE
        >3
        $12
        sunsubscribe
        $1
        b
        :0
        > SUNSUBSCRIBE
        >3
        $12
        sunsubscribe
        _
        :0
    "#,
    );
}
