//! `SETBIT`, `GETBIT`, `BITCOUNT`, `LCS`, `OBJECT` and `FUNCTION`.
use super::*;

#[test]
fn setbit_grows_the_string_and_returns_the_old_bit() {
    transcript(
        r#"
        > SETBIT k 1 1
        (integer) 0
        // bit 1 of byte 0 is 0x40
        > GET k
        "@"
        > SETBIT k 1 1
        (integer) 1
        > SETBIT k 15 1
        (integer) 0
        // grown with zero bytes
        > STRLEN k
        (integer) 2
        > SETBIT k 1 0
        (integer) 1
        > GETBIT k 1
        (integer) 0
        > GETBIT k 15
        (integer) 1
        // past the end reads 0
        > GETBIT k 9999
        (integer) 0
        > GETBIT missing 0
        (integer) 0
    "#,
    );
}

#[test]
fn setbit_keeps_the_expiry_and_is_logged_as_itself() {
    let mut s = Session::after("SET k a EX 100");
    assert_eq!(s.logged("SETBIT k 7 0"), ["SETBIT k 7 0"]);
    s.transcript(
        r#"
        > GET k
        "`"
        > TTL k
        (integer) 100
    "#,
    );
}

#[test]
fn bit_arguments_are_checked() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SETBIT k -1 1
        (error) ERR bit offset is not an integer or out of range
        // past 512 MiB
        > SETBIT k 4294967296 1
        (error) ERR bit offset is not an integer or out of range
        > SETBIT k x 1
        (error) ERR bit offset is not an integer or out of range
        > SETBIT k 0 2
        (error) ERR bit is not an integer or out of range
        > SETBIT k 0 -1
        (error) ERR bit is not an integer or out of range
        // nothing was created
        > EXISTS k
        (integer) 0
    "#,
    );
    s.run("HSET h f v");
    assert!(matches!(s.run("SETBIT h 0 1"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert!(matches!(s.run("GETBIT h 0"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
}

#[test]
fn bitcount_over_bytes_and_bits() {
    transcript(
        r#"
        > SET k foobar
        OK
        > BITCOUNT k
        (integer) 26
        > BITCOUNT k 0 0
        (integer) 4
        > BITCOUNT k 1 1
        (integer) 6
        > BITCOUNT k 1 1 BYTE
        (integer) 6
        > BITCOUNT k 5 30 BIT
        (integer) 17
        > BITCOUNT k -2 -1
        (integer) 7
        > BITCOUNT k 3 1
        (integer) 0
        > BITCOUNT missing
        (integer) 0
        > BITCOUNT k 0
        (error) ERR syntax error
        > BITCOUNT k 0 1 WORD
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn lcs_finds_the_subsequence_its_length_and_its_runs() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MSET a ohmytext b mynewtext
        OK
        > LCS a b
        "mytext"
        > LCS a b LEN
        (integer) 6
        // runs from last to first
        > LCS a b IDX
        1) "matches"
        2) 1) 1) 1) (integer) 4
                 2) (integer) 7
              2) 1) (integer) 5
                 2) (integer) 8
           2) 1) 1) (integer) 2
                 2) (integer) 3
              2) 1) (integer) 0
                 2) (integer) 1
        3) "len"
        4) (integer) 6
        > LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN
        1) "matches"
        2) 1) 1) 1) (integer) 4
                 2) (integer) 7
              2) 1) (integer) 5
                 2) (integer) 8
              3) (integer) 4
        3) "len"
        4) (integer) 6
        > LCS a missing
        ""
        > LCS a b LEN IDX
        (error) ERR If you want both the length and indexes, please just use IDX.
        > LCS a b FOO
        (error) ERR syntax error
    "#,
    );
    s.run("HSET h f v");
    assert_eq!(
        s.run("LCS a h"),
        err("ERR The specified keys must contain string values")
    );
}

#[test]
fn lcs_refuses_a_table_past_proto_max_bulk_len() {
    let mut s = Session::after("CONFIG SET proto-max-bulk-len 1mb");
    let long = "x".repeat(600);
    s.run(&format!("MSET a {long} b {long}"));
    assert!(matches!(
        s.run("LCS a b LEN"),
        Reply::Error(e) if e.contains("exceeds proto-max-bulk-len")
    ));
}

#[test]
fn object_tells_how_a_value_is_kept_without_touching_it() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET k v
        OK
        > HSET h f v
        (integer) 1
        > OBJECT ENCODING k
        "raw"
        > OBJECT ENCODING h
        "listpack"
        > CONFIG SET hash-max-listpack-entries 1
        OK
        > HSET h g v
        (integer) 1
        > OBJECT ENCODING h
        "hashtable"
        > OBJECT ENCODING missing
        (nil)
        > OBJECT REFCOUNT h
        (integer) 1
    "#,
    );
    s.advance(5_000);
    s.transcript(
        r#"
        > OBJECT IDLETIME k
        (integer) 5
        // OBJECT is no access
        > OBJECT IDLETIME k
        (integer) 5
    "#,
    );
    s.run("GET k");
    assert_eq!(s.run("OBJECT IDLETIME k"), int(0), "GET is");
    s.advance(2_000);
    s.run("TYPE k");
    assert_eq!(
        s.run("OBJECT IDLETIME k"),
        int(2),
        "TYPE is not, as in Redis"
    );
    assert!(matches!(s.run("OBJECT FREQ k"), Reply::Error(e) if e.contains("LFU")));
    assert!(matches!(s.run("OBJECT HELP"), Reply::Array(Some(lines)) if lines.len() > 4));
    assert!(matches!(s.run("OBJECT NOPE k"), Reply::Error(e) if e.contains("unknown subcommand")));
}

#[test]
fn time_is_the_server_clock() {
    let mut s = Session::new();
    s.now = 1_700_000_123_456;
    assert_eq!(s.run("TIME"), bulks(&["1700000123", "456000"]));
}

#[test]
fn a_write_refused_for_memory_aborts_the_transaction_at_queueing() {
    let mut s = Session::new();
    s.run("SET big 1234567890");
    s.run("CONFIG SET maxmemory 1");
    assert_eq!(s.run("MULTI"), ok());
    assert!(matches!(s.run("SET x 1"), Reply::Error(e) if e.starts_with("OOM")));
    assert_eq!(
        s.run("GET big"),
        Reply::Simple("QUEUED".into()),
        "reads queue"
    );
    assert!(matches!(s.run("EXEC"), Reply::Error(e) if e.starts_with("EXECABORT")));
    assert_eq!(s.run("MULTI"), ok());
    assert!(s.run("SET x 1").is_error());
    assert_eq!(s.run("DISCARD"), ok(), "DISCARD is never refused");
}

#[test]
fn exec_runs_nothing_when_memory_ran_out_after_queueing() {
    let mut s = Session::new();
    s.run("MULTI");
    s.run("SET x 1");
    s.run("GET x");
    // Another client lowers the limit (this one is inside MULTI).
    s.engine.config_mut().maxmemory = 1;
    assert!(matches!(
        s.run("EXEC"),
        Reply::Error(e) if e.starts_with("EXECABORT Transaction discarded because of: OOM")
    ));
    assert_eq!(s.run("EXISTS x"), int(0));
}

#[test]
fn shutdown_is_refused_inside_a_transaction() {
    let mut s = Session::new();
    s.run("MULTI");
    s.run("SET foo bar");
    assert_eq!(
        s.run("SHUTDOWN"),
        err("ERR Command not allowed inside a transaction")
    );
    assert!(matches!(s.run("EXEC"), Reply::Error(e) if e.starts_with("EXECABORT")));
    assert_eq!(s.run("GET foo"), nil());
}

#[test]
fn bitcount_reads_the_key_then_its_range_as_redis_7_0_does() {
    transcript(
        r#"
        > SET str xxxx
        OK
        // negative, start past end
        > BITCOUNT str -6 -7
        (integer) 0
        > BITCOUNT str -6 -15 BIT
        (integer) 0
        // a missing key first
        > BITCOUNT missing 0 1 WORD
        (integer) 0
        > BITCOUNT missing 0
        (integer) 0
        > BITCOUNT str -7 -6 WORD
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn setbit_that_changes_nothing_logs_nothing() {
    let mut s = Session::new();
    assert_eq!(s.logged("SETBIT k 0 0"), ["SETBIT k 0 0"], "created");
    assert!(s.logged("SETBIT k 0 0").is_empty());
    assert!(s.logged("SETBIT k 5 0").is_empty());
    s.logs(
        r#"
        // grown
        > SETBIT k 9 0
        SETBIT k 9 0
        > SETBIT k 0 1
        SETBIT k 0 1
    "#,
    );
    assert_eq!(s.run("SETBIT k 0 1"), int(1));
}
