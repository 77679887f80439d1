//! Publish/subscribe between two clients of one engine.

use alloc::vec;

use super::Session;
use crate::commands::ClientCtx;
use crate::resp::{split_args, Reply};

fn bulk(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

fn confirm(kind: &str, name: &str, n: i64) -> Reply {
    Reply::array(vec![bulk(kind), bulk(name), Reply::Integer(n)])
}

/// Runs `line` as `client` on `s`'s engine.
fn as_client(s: &mut Session, client: &mut ClientCtx, line: &str) -> Reply {
    let args = split_args(line.as_bytes()).unwrap();
    s.engine.execute(&args, client, s.now).reply
}

#[test]
fn a_subscriber_gets_what_is_published_and_nothing_is_logged() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(20);
    assert_eq!(
        as_client(&mut s, &mut sub, "SUBSCRIBE news sport"),
        Reply::Sequence(vec![
            confirm("subscribe", "news", 1),
            confirm("subscribe", "sport", 2)
        ])
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PSUBSCRIBE n*"),
        Reply::Sequence(vec![confirm("psubscribe", "n*", 3)])
    );
    let published = s.exec("PUBLISH news hello");
    assert_eq!(published.reply, Reply::Integer(2), "channel + pattern");
    assert!(published.effects.is_empty(), "messages are not data");
    let messages = s.engine.take_messages();
    assert_eq!(messages.len(), 2);
    assert!(messages.iter().all(|(id, _)| *id == 20));
    assert_eq!(
        messages[0].1,
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
    s.expect(&[
        ("PUBLISH weather rain", Reply::Integer(0)),
        (
            "PUBSUB NUMSUB news nobody",
            Reply::array(vec![
                bulk("news"),
                Reply::Integer(1),
                bulk("nobody"),
                Reply::Integer(0),
            ]),
        ),
        ("PUBSUB NUMPAT", Reply::Integer(1)),
        ("PUBSUB CHANNELS s*", Reply::array(vec![bulk("sport")])),
    ]);
}

#[test]
fn a_subscribed_client_may_only_ping_and_manage_subscriptions() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(21);
    as_client(&mut s, &mut sub, "SUBSCRIBE a");
    let refused = as_client(&mut s, &mut sub, "GET k");
    assert_eq!(
        refused,
        Reply::error(
            "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        )
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PING"),
        Reply::array(vec![bulk("pong"), bulk("")])
    );
    // Unsubscribing from everything ends the mode.
    assert_eq!(
        as_client(&mut s, &mut sub, "UNSUBSCRIBE"),
        Reply::Sequence(vec![confirm("unsubscribe", "a", 0)])
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PING"),
        Reply::Simple("PONG".into())
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PUNSUBSCRIBE"),
        Reply::array(vec![bulk("punsubscribe"), Reply::nil(), Reply::Integer(0)])
    );
}

#[test]
fn a_client_that_leaves_receives_nothing_more() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(22);
    as_client(&mut s, &mut sub, "SUBSCRIBE a");
    s.engine.client_gone(22);
    assert_eq!(s.run("PUBLISH a x"), Reply::Integer(0));
    assert!(s.engine.take_messages().is_empty());
    assert_eq!(s.run("PUBSUB CHANNELS"), Reply::array(vec![]));
}

#[test]
fn reset_leaves_a_fresh_connection() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(23);
    as_client(&mut s, &mut c, "SELECT 3");
    as_client(&mut s, &mut c, "CLIENT SETNAME me");
    as_client(&mut s, &mut c, "SUBSCRIBE a");
    assert_eq!(
        as_client(&mut s, &mut c, "RESET"),
        Reply::Simple("RESET".into())
    );
    assert_eq!((c.db(), c.name(), c.subscriptions()), (0, None, 0));
    assert_eq!(s.run("PUBLISH a x"), Reply::Integer(0));
    // Inside a transaction, RESET is not queued: it ends it.
    as_client(&mut s, &mut c, "MULTI");
    assert_eq!(
        as_client(&mut s, &mut c, "RESET"),
        Reply::Simple("RESET".into())
    );
    assert_eq!(
        as_client(&mut s, &mut c, "EXEC"),
        Reply::error("ERR EXEC without MULTI")
    );
}

#[test]
fn client_list_info_kill_and_no_evict_see_every_connection() {
    let mut s = Session::new();
    s.engine.client_connected(7, "10.0.2.2:5000".into(), s.now);
    s.engine.client_connected(30, "10.0.2.2:5001".into(), s.now);
    let mut other = ClientCtx::new(30);
    as_client(&mut s, &mut other, "CLIENT SETNAME worker");
    as_client(&mut s, &mut other, "SUBSCRIBE jobs");
    s.advance(3_000);
    let Reply::Verbatim(list) = s.run("CLIENT LIST") else {
        panic!("CLIENT LIST is verbatim text");
    };
    let list = alloc::string::String::from_utf8(list).unwrap();
    let lines: alloc::vec::Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with("id=7 addr=10.0.2.2:5000 "), "{list}");
    assert!(lines[0].contains(" cmd=client "), "{list}");
    assert!(lines[1].contains("name=worker"), "{list}");
    assert!(
        lines[1].contains("flags=P") && lines[1].contains("sub=1"),
        "{list}"
    );
    assert!(lines[1].contains("age=3 idle=3"), "{list}");
    let Reply::Verbatim(pubsub) = s.run("CLIENT LIST TYPE pubsub") else {
        panic!("bulk");
    };
    assert_eq!(pubsub.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(s.run("CLIENT NO-EVICT on"), Reply::ok());
    let Reply::Verbatim(me) = s.run("CLIENT INFO") else {
        panic!("bulk");
    };
    assert!(me.starts_with(b"id=7 ") && me.windows(8).any(|w| w == b"flags=Ne"));
    // Killing: itself is skipped by default; the old form names an address.
    s.expect(&[
        ("CLIENT KILL ADDR 10.0.2.2:5000", Reply::Integer(0)),
        ("CLIENT KILL TYPE pubsub", Reply::Integer(1)),
    ]);
    assert_eq!(s.engine.take_kills(), vec![30]);
    s.expect(&[
        ("CLIENT KILL 10.0.2.2:9", Reply::error("ERR No such client")),
        ("CLIENT KILL 10.0.2.2:5001", Reply::ok()),
    ]);
    assert_eq!(s.engine.take_kills(), vec![30]);
    s.engine.client_gone(30);
    assert_eq!(s.run("CLIENT KILL ID 30"), Reply::Integer(0));
    // Killing itself: the reply goes out, then the connection closes.
    assert!(!s.client.should_close());
    assert_eq!(s.run("CLIENT KILL ID 7 SKIPME no"), Reply::Integer(1));
    assert!(s.client.should_close());
    assert_eq!(s.engine.take_kills(), Vec::<u64>::new());
}
