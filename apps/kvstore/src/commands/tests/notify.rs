//! Keyspace notifications: what a `PSUBSCRIBE *` client hears as others
//! change keys, per `notify-keyspace-events`.

use alloc::string::String;
use alloc::vec::Vec;

use super::Session;
use crate::commands::ClientCtx;

/// A session with a subscriber to every channel and the given setting.
pub(super) fn listening(setting: &str) -> Session {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(99);
    s.exec_as(&mut sub, "PSUBSCRIBE *");
    let set = format!("CONFIG SET notify-keyspace-events {setting}");
    assert!(!s.run(&set).is_error());
    s
}

/// The channel and message of every message delivered since the last call.
pub(super) fn heard(s: &mut Session) -> Vec<String> {
    s.engine
        .take_messages()
        .into_iter()
        .map(|(_, bytes)| {
            // *4 pmessage * <channel> <message>: keep the last two.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let parts: Vec<&str> = text.split("\r\n").collect();
            format!("{} {}", parts[6], parts[8])
        })
        .collect()
}

#[test]
fn keyspace_and_keyevent_channels() {
    let mut s = listening("KEA");
    s.run("SET foo bar");
    assert_eq!(
        heard(&mut s),
        ["__keyspace@0__:foo set", "__keyevent@0__:set foo"]
    );
    let mut s = listening("K$");
    s.run("SELECT 3");
    s.run("INCR n");
    assert_eq!(heard(&mut s), ["__keyspace@3__:n incrby"]);
}

#[test]
fn only_enabled_classes_are_sent() {
    let mut s = listening("Kh");
    s.run("SET foo bar");
    s.run("HMSET h yes 1 no 0");
    s.run("HINCRBY h yes 10");
    s.run("HDEL h yes no");
    assert_eq!(
        heard(&mut s),
        [
            "__keyspace@0__:h hset",
            "__keyspace@0__:h hincrby",
            "__keyspace@0__:h hdel"
        ]
    );
    let mut s = listening("K");
    s.run("SET foo bar");
    assert!(heard(&mut s).is_empty(), "a channel kind without a class");
}

#[test]
fn generic_events() {
    let mut s = listening("Kg");
    s.run("SET foo bar");
    s.run("EXPIRE foo 100");
    s.run("PERSIST foo");
    s.run("RENAME foo baz");
    s.run("COPY baz qux");
    s.run("MOVE qux 2");
    s.run("DEL baz nothing");
    assert_eq!(
        heard(&mut s),
        [
            "__keyspace@0__:foo expire",
            "__keyspace@0__:foo persist",
            "__keyspace@0__:foo rename_from",
            "__keyspace@0__:baz rename_to",
            "__keyspace@0__:qux copy_to",
            "__keyspace@0__:qux move_from",
            "__keyspace@2__:qux move_to",
            "__keyspace@0__:baz del",
        ]
    );
}

#[test]
fn expired_keys_are_announced_lazily_and_by_the_sweep() {
    let mut s = listening("Ex");
    s.run("PSETEX a 100 1");
    s.run("PSETEX b 100 1");
    s.advance(200);
    s.run("GET a");
    assert_eq!(heard(&mut s), ["__keyevent@0__:expired a"]);
    s.engine.active_expire(s.now, 100);
    assert_eq!(heard(&mut s), ["__keyevent@0__:expired b"]);
}

#[test]
fn new_keys_come_before_the_change_that_made_them() {
    let mut s = listening("En$");
    s.run("SET foo bar");
    s.run("SET foo baz");
    s.run("MSET foo 1 bar 2");
    assert_eq!(
        heard(&mut s),
        [
            "__keyevent@0__:new foo",
            "__keyevent@0__:set foo",
            "__keyevent@0__:set foo",
            "__keyevent@0__:new bar",
            "__keyevent@0__:set foo",
            "__keyevent@0__:set bar",
        ]
    );
}

#[test]
fn the_setting_reads_back_and_bad_classes_are_refused() {
    let mut s = Session::after("CONFIG SET notify-keyspace-events KA");
    assert_eq!(
        s.run("CONFIG GET notify-keyspace-events"),
        super::bulks(&["notify-keyspace-events", "AK"])
    );
    assert!(s.run("CONFIG SET notify-keyspace-events Kq").is_error());
}

#[test]
fn hyperloglog_writes_are_pfadd_events() {
    let mut s = listening("K$");
    for line in ["PFADD h a", "PFADD h a", "PFMERGE h", "PFCOUNT h"] {
        s.run(line);
    }
    assert_eq!(
        heard(&mut s),
        ["__keyspace@0__:h pfadd", "__keyspace@0__:h pfadd"],
        "a PFADD that changed a register, and PFMERGE"
    );
}

#[test]
fn a_georadius_store_announces_the_new_key_then_the_store() {
    let mut s = listening("KAn");
    s.run("GEOADD Sicily 13.361389 38.115556 Palermo");
    heard(&mut s);
    s.run("GEORADIUS Sicily 15 37 200 km STORE dst");
    assert_eq!(
        heard(&mut s),
        [
            "__keyspace@0__:dst new",
            "__keyspace@0__:dst georadiusstore"
        ]
    );
}

#[test]
fn consumer_groups_tell_each_consumer_made_and_removed() {
    let mut s = listening("Kt");
    for line in [
        "XGROUP CREATE mystream mygroup $ MKSTREAM",
        "XGROUP CREATECONSUMER mystream mygroup Bob",
        "XADD mystream 1 field1 A",
        "XREADGROUP GROUP mygroup Alice STREAMS mystream >",
        "XCLAIM mystream mygroup Mike 0 1-0 FORCE",
        "XGROUP DELCONSUMER mystream mygroup Lee",
        "XAUTOCLAIM mystream mygroup Bob 0 1-0",
        "XGROUP DELCONSUMER mystream mygroup Bob",
    ] {
        s.run(line);
    }
    let channel = "__keyspace@0__:mystream";
    let expected: Vec<String> = [
        "xgroup-create",
        "xgroup-createconsumer",
        "xadd",
        "xgroup-createconsumer",
        "xgroup-createconsumer",
        "xgroup-delconsumer",
    ]
    .iter()
    .map(|event| format!("{channel} {event}"))
    .collect();
    assert_eq!(heard(&mut s), expected);
}
