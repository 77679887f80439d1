//! `SORT` and `SORT_RO`: orders, patterns, windows, storing the result,
//! and how a stored result is logged, watched, announced and bounded.

use alloc::format;

use super::*;
use crate::store::{List, Store};

#[test]
fn numbers_sort_numerically_and_alpha_by_bytes() {
    transcript(
        r#"
        > RPUSH l 3 10 1 2 1.5 -4
        (integer) 6
        > SORT l
        1) "-4"
        2) "1"
        3) "1.5"
        4) "2"
        5) "3"
        6) "10"
        > SORT l DESC
        1) "10"
        2) "3"
        3) "2"
        4) "1.5"
        5) "1"
        6) "-4"
        > SORT l ALPHA
        1) "-4"
        2) "1"
        3) "1.5"
        4) "10"
        5) "2"
        6) "3"
        > SORT_RO l alpha desc
        1) "3"
        2) "2"
        3) "10"
        4) "1.5"
        5) "1"
        6) "-4"
        // Equal numbers are ordered by their bytes.
        > RPUSH eq 1.0 1 01
        (integer) 3
        > SORT eq
        1) "01"
        2) "1"
        3) "1.0"
        // Sets (both encodings) and sorted sets sort the same way.
        > SADD ints 5 -1 3
        (integer) 3
        > SORT ints DESC
        1) "5"
        2) "3"
        3) "-1"
        > SADD words pear apple fig
        (integer) 3
        > SORT words ALPHA
        1) "apple"
        2) "fig"
        3) "pear"
        > ZADD z 1 a 5 b 2 c 10 d 3 e
        (integer) 5
        > SORT z ALPHA DESC
        1) "e"
        2) "d"
        3) "c"
        4) "b"
        5) "a"
        // A missing key is an empty list.
        > SORT nokey
        (empty array)
        > SET str x
        OK
        > SORT str
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > HSET h f v
        (integer) 1
        > SORT_RO h
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
    "#,
    );
}

#[test]
fn elements_that_are_not_numbers_fail_a_numeric_sort() {
    transcript(
        r#"
        > SADD myset 1 2 3 4 not-a-double
        (integer) 5
        > SORT myset
        (error) ERR One or more scores can't be converted into double
        > SORT myset ALPHA LIMIT 4 1
        1) "not-a-double"
        > DEL myset
        (integer) 1
        > SADD myset 1 2 3 4
        (integer) 4
        > MSET score:1 10 score:2 20 score:3 30 score:4 not-a-double
        OK
        > SORT myset BY score:*
        (error) ERR One or more scores can't be converted into double
        > SORT myset BY score:* STORE out
        (error) ERR One or more scores can't be converted into double
        // nothing stored
        > EXISTS out
        (integer) 0
        > RPUSH nan nan 1
        (integer) 2
        > SORT nan
        (error) ERR One or more scores can't be converted into double
        // Infinities are numbers.
        > RPUSH inf 1 +inf -inf
        (integer) 3
        > SORT inf
        1) "-inf"
        2) "1"
        3) "+inf"
    "#,
    );
}

#[test]
fn by_reads_strings_and_hash_fields() {
    transcript(
        r#"
        > RPUSH ids 1 2 3 4
        (integer) 4
        > MSET w_1 40 w_2 10 w_3 30 w_4 20
        OK
        > HSET o_1 w 4
        (integer) 1
        > HSET o_2 w 3
        (integer) 1
        > HSET o_3 w 2
        (integer) 1
        > HSET o_4 w 1
        (integer) 1
        > SORT ids BY w_*
        1) "2"
        2) "4"
        3) "3"
        4) "1"
        > SORT ids BY o_*->w
        1) "4"
        2) "3"
        3) "2"
        4) "1"
        > SORT ids BY w_* LIMIT 1 2
        1) "4"
        2) "3"
        // Missing keys (and keys of another type) sort as 0, then by element.
        > DEL w_3
        (integer) 1
        > DEL w_4
        (integer) 1
        > SADD w_4 x
        (integer) 1
        > SORT ids BY w_*
        1) "3"
        2) "4"
        3) "2"
        4) "1"
        // With ALPHA the values are compared as bytes, missing ones first.
        > MSET a_1 b a_2 a a_4 c
        OK
        > SORT ids BY a_* ALPHA
        1) "3"
        2) "2"
        3) "1"
        4) "4"
        // All values equal: ordered by the elements.
        > SORT ids BY nothing_* DESC
        1) "4"
        2) "3"
        3) "2"
        4) "1"
    "#,
    );
}

#[test]
fn get_returns_the_element_or_what_a_pattern_names() {
    transcript(
        r#"
        > RPUSH ids 2 1 3
        (integer) 3
        > MSET name_1 one name_2 two
        OK
        > HSET o_3 n three
        (integer) 1
        > SORT ids GET # GET name_* GET o_*->n
        1) "1"
        2) "one"
        3) (nil)
        4) "2"
        5) "two"
        6) (nil)
        7) "3"
        8) (nil)
        9) "three"
        // A pattern without `*` names no key.
        > SET foo bar
        OK
        > SORT ids GET foo
        1) (nil)
        2) (nil)
        3) (nil)
        // A `->` with nothing after it is part of the key's name.
        > DEL ids
        (integer) 1
        > LPUSH ids a
        (integer) 1
        > SET x:a-> 100
        OK
        > SORT ids BY num GET x:*->
        1) "100"
        > SORT_RO ids BY nosort GET x:*->
        1) "100"
    "#,
    );
}

#[test]
fn nosort_keeps_the_input_order() {
    transcript(
        r#"
        > LPUSH l 2 1 4 3 5
        (integer) 5
        > SORT l BY nosort
        1) "5"
        2) "3"
        3) "4"
        4) "1"
        5) "2"
        > SORT l BY nosort DESC
        1) "2"
        2) "1"
        3) "4"
        4) "3"
        5) "5"
        > SORT l BY nosort LIMIT 0 3
        1) "5"
        2) "3"
        3) "4"
        > SORT l BY nosort DESC LIMIT 1 2
        1) "1"
        2) "4"
        // A sorted set keeps its score order, LIMIT counted in it.
        > ZADD z 1 a 5 b 2 c 10 d 3 e
        (integer) 5
        > SORT z BY nosort
        1) "a"
        2) "c"
        3) "e"
        4) "b"
        5) "d"
        > SORT z BY nosort DESC
        1) "d"
        2) "b"
        3) "e"
        4) "c"
        5) "a"
        > SORT z BY nosort DESC LIMIT 0 2
        1) "d"
        2) "b"
        > SORT z BY nosort LIMIT 0 1
        1) "a"
        > SORT z BY nosort LIMIT 5 10
        (empty array)
        > SORT z BY nosort LIMIT -10 100
        1) "a"
        2) "c"
        3) "e"
        4) "b"
        5) "d"
        // Elements that are not numbers are fine when nothing is sorted.
        > RPUSH words b a
        (integer) 2
        > SORT words BY nosort
        1) "b"
        2) "a"
    "#,
    );
}

#[test]
fn a_set_stored_with_nosort_is_sorted_by_bytes() {
    transcript(
        r#"
        > SADD myset a b c d e f g h i l m n o p q r s t u v z aa aaa azz
        (integer) 24
        > SORT myset ALPHA BY _ STORE mylist
        (integer) 24
        > LRANGE mylist 0 3
        1) "a"
        2) "aa"
        3) "aaa"
        4) "azz"
    "#,
    );
}

#[test]
fn limit_selects_a_window() {
    transcript(
        r#"
        > RPUSH l 5 4 3 2 1 0
        (integer) 6
        > SORT l LIMIT 1 2
        1) "1"
        2) "2"
        > SORT l LIMIT 4 -1
        1) "4"
        2) "5"
        > SORT l LIMIT -2 2
        1) "0"
        2) "1"
        > SORT l LIMIT 2 0
        (empty array)
        > SORT l LIMIT 6 1
        (empty array)
        > SORT_RO l BY a LIMIT 4 9223372036854775807
        1) "1"
        2) "0"
        > SORT l DESC LIMIT 0 2
        1) "5"
        2) "4"
    "#,
    );
}

#[test]
fn syntax_errors() {
    transcript(
        r#"
        > RPUSH l 1
        (integer) 1
        > SORT_RO l STORE bar
        (error) ERR syntax error
        > SORT l LIMIT 1
        (error) ERR syntax error
        > SORT l GET
        (error) ERR syntax error
        > SORT l bogus
        (error) ERR syntax error
        > SORT l LIMIT a 1
        (error) ERR value is not an integer or out of range
        // Options are read before the key is looked at.
        > SET str x
        OK
        > SORT str bogus
        (error) ERR syntax error
        > SORT
        (error) ERR wrong number of arguments for 'sort' command
    "#,
    );
}

#[test]
fn store_writes_a_list_or_removes_the_destination() {
    transcript(
        r#"
        > RPUSH src 3 1 2
        (integer) 3
        > SET dst old EX 100
        OK
        > SORT src STORE dst
        (integer) 3
        > LRANGE dst 0 -1
        1) "1"
        2) "2"
        3) "3"
        // the old expiry goes
        > TTL dst
        (integer) -1
        > OBJECT ENCODING dst
        "quicklist"
        // Missing GET values are stored as empty strings.
        > SET v_1 one
        OK
        > SORT src GET v_* GET # STORE dst
        (integer) 6
        > LRANGE dst 0 -1
        1) "one"
        2) "1"
        3) ""
        4) "2"
        5) ""
        6) "3"
        // An empty result removes the destination, or creates nothing.
        > SORT emptylist STORE dst
        (integer) 0
        > EXISTS dst
        (integer) 0
        > SORT src LIMIT 10 10 STORE zap
        (integer) 0
        > EXISTS zap
        (integer) 0
        // The source itself may be the destination.
        > SORT src DESC STORE src
        (integer) 3
        > LRANGE src 0 -1
        1) "3"
        2) "2"
        3) "1"
        // With BY nosort a list is stored in its own order.
        > LPUSH testa 2 1 4 3 5
        (integer) 5
        > SORT testa BY nosort LIMIT 0 3 STORE testb
        (integer) 3
        > LRANGE testb 0 -1
        1) "5"
        2) "3"
        3) "4"
    "#,
    );
}

#[test]
fn store_is_logged_as_its_result_and_replays() {
    let mut s = Session::new();
    s.run("RPUSH src b c a");
    s.run("MSET w_a 3 w_b 1 w_c 2");
    s.logs(
        r#"
        > SORT src BY w_* GET # GET w_* STORE dst
        DEL dst
        RPUSH dst b 1 c 2 a 3
        // a read
        > SORT src
        (nothing)
        > SORT missing STORE dst
        DEL dst
        > SORT missing STORE dst
        (nothing)
    "#,
    );
    // Replaying the log gives the same dataset, whatever the sources hold
    // by then.
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        RPUSH src 3 1 2
        SADD set x y z
        ZADD z 1 p 2 q
        SET k_x 10
        SORT src STORE a
        SORT set ALPHA DESC STORE b
        SORT z BY nosort GET # GET k_* STORE c
        SORT set BY k_* LIMIT 0 1 STORE d
        DEL src
        SORT src STORE a
    "#,
    );
    s.assert_reloads(&log);
    s.transcript(
        r#"
        > EXISTS a
        (integer) 0
        > LRANGE b 0 -1
        1) "z"
        2) "y"
        3) "x"
    "#,
    );
}

#[test]
fn store_changes_watched_keys_even_when_the_result_is_empty() {
    transcript(
        r#"
        > LPUSH foo bar
        (integer) 1
        > WATCH foo
        OK
        > SORT emptylist STORE foo
        (integer) 0
        > MULTI
        OK
        > PING
        QUEUED
        > EXEC
        (nil array)
        // A read-only sort changes nothing a WATCH sees.
        > RPUSH l 2 1
        (integer) 2
        > WATCH l
        OK
        > SORT l STORE other
        (integer) 2
        > SORT_RO l
        1) "1"
        2) "2"
        > MULTI
        OK
        > PING
        QUEUED
        > EXEC
        1) PONG
    "#,
    );
}

#[test]
fn pattern_keys_are_read_through_expiry() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH ids 1 2
        (integer) 2
        > SET w_1 5 PX 10
        OK
        > SET w_2 3
        OK
        > SORT ids BY w_*
        1) "2"
        2) "1"
    "#,
    );
    s.advance(20);
    // w_1 expired: missing, so 0; its removal is logged first.
    let out = s.exec("SORT ids BY w_* STORE dst");
    assert_eq!(out.reply, int(2));
    assert_eq!(shown(&out.effects), ["DEL w_1", "DEL dst", "RPUSH dst 1 2"]);
    assert_eq!(s.run("EXISTS w_1"), int(0));
}

/// What a `PSUBSCRIBE *` client hears (`channel message`) on the keyevent
/// channels while `lines` run with every keyspace event enabled.
fn heard(lines: &[&str]) -> Vec<String> {
    let mut s = super::notify::listening("KEAn");
    for line in lines {
        s.run(line);
    }
    let mut heard = super::notify::heard(&mut s);
    heard.retain(|line| line.starts_with("__keyevent"));
    heard
}

#[test]
fn store_announces_sortstore_or_del() {
    assert_eq!(
        heard(&[
            "RPUSH src 1",
            "SORT src STORE dst",
            "SORT src STORE dst",
            "SORT missing STORE dst",
            "SORT missing STORE dst",
        ]),
        [
            "__keyevent@0__:new src",
            "__keyevent@0__:rpush src",
            "__keyevent@0__:new dst",
            "__keyevent@0__:sortstore dst",
            "__keyevent@0__:sortstore dst",
            "__keyevent@0__:del dst",
        ]
    );
}

#[test]
fn a_stored_result_serves_a_blocked_client() {
    let mut s = Session::new();
    let mut waiter = crate::commands::ClientCtx::new(42);
    s.exec_as(&mut waiter, "BLPOP dst 0");
    assert!(waiter.is_blocked());
    s.run("RPUSH src 2 1");
    let out = s.exec("SORT src STORE dst");
    assert_eq!(out.reply, int(2));
    assert_eq!(
        shown(&out.effects),
        ["DEL dst", "RPUSH dst 1 2", "LPOP dst"]
    );
    assert_eq!(
        s.engine.take_unblocked(),
        [(42, array(&[bulk("dst"), bulk("1")]))]
    );
    assert_eq!(s.run("LRANGE dst 0 -1"), bulks(&["2"]));
}

#[test]
fn store_counts_toward_maxmemory_and_replies_are_bounded() {
    let element = List::element_cost(10);
    let mut s = Session::with_config(Config {
        maxmemory: (Store::cost(3, 2 * element) + Store::cost(3, element) + 10) as u64,
        ..Config::default()
    });
    assert_eq!(s.run("RPUSH src aaaaaaaaaa bbbbbbbbbb"), int(2));
    s.transcript(
        r#"
        > SORT src ALPHA STORE dst
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > SORT src ALPHA LIMIT 0 1 STORE dst
        (integer) 1
        > EXISTS dst
        (integer) 1
    "#,
    );
    // Without STORE nothing is added.
    assert_eq!(words(s.run("SORT src ALPHA")).len(), 2);
    // What GET patterns name counts, not the elements.
    let mut s = Session::with_config(Config {
        maxmemory: 4096,
        ..Config::default()
    });
    s.run("RPUSH ids 1 2");
    s.run(&format!("SET v_1 {}", "x".repeat(1500)));
    s.transcript(
        r#"
        > SORT ids GET v_* STORE dst
        (integer) 2
        > SORT ids GET v_* GET v_* STORE dst
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > SORT ids GET # GET v_* LIMIT 1 1 STORE dst
        (integer) 2
    "#,
    );
    // A reply larger than proto-max-bulk-len is refused.
    let mut s = Session::after("CONFIG SET proto-max-bulk-len 1mb");
    for n in 1..=3 {
        s.run(&format!("SET big_{n} {}", "x".repeat(400_000)));
    }
    s.run("RPUSH ids 1 2 3");
    assert_eq!(words(s.run("SORT ids LIMIT 0 2 GET big_*")).len(), 2);
    let Reply::Error(e) = s.run("SORT ids GET big_*") else {
        panic!("refused");
    };
    assert!(e.starts_with("OOM"), "{e}");
}
