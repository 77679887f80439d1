//! `SORT` and `SORT_RO`: orders, patterns, windows, storing the result,
//! and how a stored result is logged, watched, announced and bounded.

use alloc::format;

use super::*;
use crate::store::{List, Store};

/// `SORT` (or any command) run in `s`, its reply as text.
fn sorted_by(s: &mut Session, line: &str) -> Vec<String> {
    words(s.run(line))
}

#[test]
fn numbers_sort_numerically_and_alpha_by_bytes() {
    let mut s = Session::new();
    s.run("RPUSH l 3 10 1 2 1.5 -4");
    assert_eq!(
        sorted_by(&mut s, "SORT l"),
        ["-4", "1", "1.5", "2", "3", "10"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT l DESC"),
        ["10", "3", "2", "1.5", "1", "-4"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT l ALPHA"),
        ["-4", "1", "1.5", "10", "2", "3"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT_RO l alpha desc"),
        ["3", "2", "10", "1.5", "1", "-4"]
    );
    // Equal numbers are ordered by their bytes.
    s.run("RPUSH eq 1.0 1 01");
    assert_eq!(sorted_by(&mut s, "SORT eq"), ["01", "1", "1.0"]);
    // Sets (both encodings) and sorted sets sort the same way.
    s.run("SADD ints 5 -1 3");
    assert_eq!(sorted_by(&mut s, "SORT ints DESC"), ["5", "3", "-1"]);
    s.run("SADD words pear apple fig");
    assert_eq!(
        sorted_by(&mut s, "SORT words ALPHA"),
        ["apple", "fig", "pear"]
    );
    s.run("ZADD z 1 a 5 b 2 c 10 d 3 e");
    assert_eq!(
        sorted_by(&mut s, "SORT z ALPHA DESC"),
        ["e", "d", "c", "b", "a"]
    );
    // A missing key is an empty list.
    assert_eq!(s.run("SORT nokey"), array(&[]));
    s.run("SET str x");
    assert_eq!(s.run("SORT str"), err(WRONGTYPE));
    s.run("HSET h f v");
    assert_eq!(s.run("SORT_RO h"), err(WRONGTYPE));
}

#[test]
fn elements_that_are_not_numbers_fail_a_numeric_sort() {
    let mut s = Session::new();
    s.run("SADD myset 1 2 3 4 not-a-double");
    let bad = err("ERR One or more scores can't be converted into double");
    assert_eq!(s.run("SORT myset"), bad);
    assert_eq!(
        sorted_by(&mut s, "SORT myset ALPHA LIMIT 4 1"),
        ["not-a-double"]
    );
    s.run("DEL myset");
    s.run("SADD myset 1 2 3 4");
    s.run("MSET score:1 10 score:2 20 score:3 30 score:4 not-a-double");
    s.transcript(
        r#"
        > SORT myset BY score:*
        (error) ERR One or more scores can't be converted into double
        > SORT myset BY score:* STORE out
        (error) ERR One or more scores can't be converted into double
        // nothing stored
        > EXISTS out
        (integer) 0
    "#,
    );
    s.run("RPUSH nan nan 1");
    assert_eq!(s.run("SORT nan"), bad);
    // Infinities are numbers.
    s.run("RPUSH inf 1 +inf -inf");
    assert_eq!(sorted_by(&mut s, "SORT inf"), ["-inf", "1", "+inf"]);
}

#[test]
fn by_reads_strings_and_hash_fields() {
    let mut s = Session::new();
    s.run("RPUSH ids 1 2 3 4");
    s.run("MSET w_1 40 w_2 10 w_3 30 w_4 20");
    s.run("HSET o_1 w 4");
    s.run("HSET o_2 w 3");
    s.run("HSET o_3 w 2");
    s.run("HSET o_4 w 1");
    assert_eq!(sorted_by(&mut s, "SORT ids BY w_*"), ["2", "4", "3", "1"]);
    assert_eq!(
        sorted_by(&mut s, "SORT ids BY o_*->w"),
        ["4", "3", "2", "1"]
    );
    assert_eq!(sorted_by(&mut s, "SORT ids BY w_* LIMIT 1 2"), ["4", "3"]);
    // Missing keys (and keys of another type) sort as 0, then by element.
    s.run("DEL w_3");
    s.run("DEL w_4");
    s.run("SADD w_4 x");
    assert_eq!(sorted_by(&mut s, "SORT ids BY w_*"), ["3", "4", "2", "1"]);
    // With ALPHA the values are compared as bytes, missing ones first.
    s.run("MSET a_1 b a_2 a a_4 c");
    assert_eq!(
        sorted_by(&mut s, "SORT ids BY a_* ALPHA"),
        ["3", "2", "1", "4"]
    );
    // All values equal: ordered by the elements.
    assert_eq!(
        sorted_by(&mut s, "SORT ids BY nothing_* DESC"),
        ["4", "3", "2", "1"]
    );
}

#[test]
fn get_returns_the_element_or_what_a_pattern_names() {
    let mut s = Session::new();
    s.run("RPUSH ids 2 1 3");
    s.run("MSET name_1 one name_2 two");
    s.run("HSET o_3 n three");
    assert_eq!(
        sorted_by(&mut s, "SORT ids GET # GET name_* GET o_*->n"),
        ["1", "one", "nil", "2", "two", "nil", "3", "nil", "three"]
    );
    // A pattern without `*` names no key.
    s.run("SET foo bar");
    assert_eq!(sorted_by(&mut s, "SORT ids GET foo"), ["nil", "nil", "nil"]);
    // A `->` with nothing after it is part of the key's name.
    s.run("DEL ids");
    s.run("LPUSH ids a");
    s.run("SET x:a-> 100");
    assert_eq!(sorted_by(&mut s, "SORT ids BY num GET x:*->"), ["100"]);
    assert_eq!(
        sorted_by(&mut s, "SORT_RO ids BY nosort GET x:*->"),
        ["100"]
    );
}

#[test]
fn nosort_keeps_the_input_order() {
    let mut s = Session::new();
    s.run("LPUSH l 2 1 4 3 5");
    assert_eq!(
        sorted_by(&mut s, "SORT l BY nosort"),
        ["5", "3", "4", "1", "2"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT l BY nosort DESC"),
        ["2", "1", "4", "3", "5"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT l BY nosort LIMIT 0 3"),
        ["5", "3", "4"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT l BY nosort DESC LIMIT 1 2"),
        ["1", "4"]
    );
    // A sorted set keeps its score order, LIMIT counted in it.
    s.run("ZADD z 1 a 5 b 2 c 10 d 3 e");
    assert_eq!(
        sorted_by(&mut s, "SORT z BY nosort"),
        ["a", "c", "e", "b", "d"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT z BY nosort DESC"),
        ["d", "b", "e", "c", "a"]
    );
    assert_eq!(
        sorted_by(&mut s, "SORT z BY nosort DESC LIMIT 0 2"),
        ["d", "b"]
    );
    assert_eq!(sorted_by(&mut s, "SORT z BY nosort LIMIT 0 1"), ["a"]);
    assert_eq!(s.run("SORT z BY nosort LIMIT 5 10"), array(&[]));
    assert_eq!(
        sorted_by(&mut s, "SORT z BY nosort LIMIT -10 100"),
        ["a", "c", "e", "b", "d"]
    );
    // Elements that are not numbers are fine when nothing is sorted.
    s.run("RPUSH words b a");
    assert_eq!(sorted_by(&mut s, "SORT words BY nosort"), ["b", "a"]);
}

#[test]
fn a_set_stored_with_nosort_is_sorted_by_bytes() {
    let mut s = Session::new();
    s.run("SADD myset a b c d e f g h i l m n o p q r s t u v z aa aaa azz");
    assert_eq!(s.run("SORT myset ALPHA BY _ STORE mylist"), int(24));
    assert_eq!(
        sorted_by(&mut s, "LRANGE mylist 0 3"),
        ["a", "aa", "aaa", "azz"]
    );
}

#[test]
fn limit_selects_a_window() {
    let mut s = Session::new();
    s.run("RPUSH l 5 4 3 2 1 0");
    assert_eq!(sorted_by(&mut s, "SORT l LIMIT 1 2"), ["1", "2"]);
    assert_eq!(sorted_by(&mut s, "SORT l LIMIT 4 -1"), ["4", "5"]);
    assert_eq!(sorted_by(&mut s, "SORT l LIMIT -2 2"), ["0", "1"]);
    s.transcript(
        r#"
        > SORT l LIMIT 2 0
        (empty array)
        > SORT l LIMIT 6 1
        (empty array)
    "#,
    );
    assert_eq!(
        sorted_by(&mut s, "SORT_RO l BY a LIMIT 4 9223372036854775807"),
        ["1", "0"]
    );
    assert_eq!(sorted_by(&mut s, "SORT l DESC LIMIT 0 2"), ["5", "4"]);
}

#[test]
fn syntax_errors() {
    let mut s = Session::new();
    s.run("RPUSH l 1");
    s.transcript(
        r#"
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
    "#,
    );
    // Options are read before the key is looked at.
    s.run("SET str x");
    s.transcript(
        r#"
        > SORT str bogus
        (error) ERR syntax error
        > SORT
        (error) ERR wrong number of arguments for 'sort' command
    "#,
    );
}

#[test]
fn store_writes_a_list_or_removes_the_destination() {
    let mut s = Session::new();
    s.run("RPUSH src 3 1 2");
    s.run("SET dst old EX 100");
    assert_eq!(s.run("SORT src STORE dst"), int(3));
    assert_eq!(sorted_by(&mut s, "LRANGE dst 0 -1"), ["1", "2", "3"]);
    s.transcript(
        r#"
        // the old expiry goes
        > TTL dst
        (integer) -1
        > OBJECT ENCODING dst
        "quicklist"
    "#,
    );
    // Missing GET values are stored as empty strings.
    s.run("SET v_1 one");
    assert_eq!(s.run("SORT src GET v_* GET # STORE dst"), int(6));
    assert_eq!(
        sorted_by(&mut s, "LRANGE dst 0 -1"),
        ["one", "1", "", "2", "", "3"]
    );
    // An empty result removes the destination, or creates nothing.
    s.transcript(
        r#"
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
    "#,
    );
    assert_eq!(sorted_by(&mut s, "LRANGE src 0 -1"), ["3", "2", "1"]);
    // With BY nosort a list is stored in its own order.
    s.run("LPUSH testa 2 1 4 3 5");
    s.run("SORT testa BY nosort LIMIT 0 3 STORE testb");
    assert_eq!(sorted_by(&mut s, "LRANGE testb 0 -1"), ["5", "3", "4"]);
}

#[test]
fn store_is_logged_as_its_result_and_replays() {
    let mut s = Session::new();
    s.run("RPUSH src b c a");
    s.run("MSET w_a 3 w_b 1 w_c 2");
    assert_eq!(
        s.logged("SORT src BY w_* GET # GET w_* STORE dst"),
        ["DEL dst", "RPUSH dst b 1 c 2 a 3"]
    );
    assert_eq!(s.logged("SORT src"), Vec::<String>::new(), "a read");
    assert_eq!(s.logged("SORT missing STORE dst"), ["DEL dst"]);
    assert_eq!(s.logged("SORT missing STORE dst"), Vec::<String>::new());
    // Replaying the log gives the same dataset, whatever the sources hold
    // by then.
    let mut s = Session::new();
    let log = s.log_lines(&[
        "RPUSH src 3 1 2",
        "SADD set x y z",
        "ZADD z 1 p 2 q",
        "SET k_x 10",
        "SORT src STORE a",
        "SORT set ALPHA DESC STORE b",
        "SORT z BY nosort GET # GET k_* STORE c",
        "SORT set BY k_* LIMIT 0 1 STORE d",
        "DEL src",
        "SORT src STORE a",
    ]);
    s.assert_reloads(&log);
    assert_eq!(s.run("EXISTS a"), int(0));
    assert_eq!(sorted_by(&mut s, "LRANGE b 0 -1"), ["z", "y", "x"]);
}

#[test]
fn store_changes_watched_keys_even_when_the_result_is_empty() {
    let mut s = Session::new();
    s.run("LPUSH foo bar");
    s.run("WATCH foo");
    s.run("SORT emptylist STORE foo");
    s.run("MULTI");
    s.run("PING");
    assert_eq!(s.run("EXEC"), Reply::Array(None));
    // A read-only sort changes nothing a WATCH sees.
    s.run("RPUSH l 2 1");
    s.run("WATCH l");
    s.run("SORT l STORE other");
    s.run("SORT_RO l");
    s.run("MULTI");
    s.run("PING");
    assert_eq!(
        s.run("EXEC"),
        Reply::array(vec![Reply::Simple("PONG".into())])
    );
}

#[test]
fn pattern_keys_are_read_through_expiry() {
    let mut s = Session::new();
    s.run("RPUSH ids 1 2");
    s.run("SET w_1 5 PX 10");
    s.run("SET w_2 3");
    assert_eq!(sorted_by(&mut s, "SORT ids BY w_*"), ["2", "1"]);
    s.advance(20);
    // w_1 expired: missing, so 0; its removal is logged first.
    let out = s.exec("SORT ids BY w_* STORE dst");
    assert_eq!(out.reply, int(2));
    let logged: Vec<String> = out.effects.commands().iter().map(show).collect();
    assert_eq!(logged, ["DEL w_1", "DEL dst", "RPUSH dst 1 2"]);
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
    let blpop = crate::resp::split_args(b"BLPOP dst 0").unwrap();
    s.engine.execute(&blpop, &mut waiter, s.now);
    assert!(waiter.is_blocked());
    s.run("RPUSH src 2 1");
    let out = s.exec("SORT src STORE dst");
    assert_eq!(out.reply, int(2));
    let logged: Vec<String> = out.effects.commands().iter().map(show).collect();
    assert_eq!(logged, ["DEL dst", "RPUSH dst 1 2", "LPOP dst"]);
    assert_eq!(
        s.engine.take_unblocked(),
        [(42, array(&[bulk("dst"), bulk("1")]))]
    );
    assert_eq!(sorted_by(&mut s, "LRANGE dst 0 -1"), ["2"]);
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
    let mut s = Session::new();
    s.run("CONFIG SET proto-max-bulk-len 1mb");
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
