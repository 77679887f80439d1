//! `requirepass`, `AUTH` and `HELLO`.

use super::*;

fn err(reply: Reply) -> String {
    match reply {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn without_a_password_everything_is_allowed_and_auth_says_so() {
    let mut s = Session::new();
    assert_eq!(s.run("SET k v"), Reply::ok());
    assert!(err(s.run("AUTH secret")).starts_with("ERR AUTH <password> called without"));
    // The default user takes any password then (Redis: nopass); found by
    // the differential test.
    assert_eq!(s.run("AUTH default anything"), Reply::ok());
    assert!(err(s.run("AUTH someone anything")).starts_with("WRONGPASS"));
}

#[test]
fn with_a_password_only_auth_hello_and_quit_come_before_it() {
    let mut config = Config::default();
    config.set("requirepass", b"s3cret").unwrap();
    let mut s = Session::with_config(config);
    for command in [
        "GET k",
        "SET k v",
        "FLUSHALL",
        "CONFIG SET requirepass x",
        "PING",
    ] {
        assert_eq!(
            err(s.run(command)),
            "NOAUTH Authentication required.",
            "{command}"
        );
    }
    assert!(err(s.run("NOSUCHCOMMAND")).starts_with("ERR unknown command"));
    assert!(err(s.run("AUTH wrong")).starts_with("WRONGPASS"));
    assert!(
        err(s.run("AUTH admin s3cret")).starts_with("WRONGPASS"),
        "one user: default"
    );
    assert!(err(s.run("HELLO 2")).starts_with("NOAUTH HELLO must be called"));
    s.transcript(
        r#"
        > AUTH s3cret
        OK
        > SET k v
        OK
    "#,
    );
    // Another connection starts unauthenticated.
    let mut other = ClientCtx::new(8);
    let args = |s: &str| {
        s.split(' ')
            .map(|a| a.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let reply = s.engine.execute(&args("GET k"), &mut other, s.now).reply;
    assert_eq!(err(reply), "NOAUTH Authentication required.");
    let reply = s
        .engine
        .execute(&args("AUTH default s3cret"), &mut other, s.now)
        .reply;
    assert_eq!(reply, Reply::ok());
}

#[test]
fn hello_authenticates_names_and_describes_the_server() {
    let mut config = Config::default();
    config.set("requirepass", b"pw").unwrap();
    let mut s = Session::with_config(config);
    assert!(err(s.run("HELLO 2 AUTH default nope")).starts_with("WRONGPASS"));
    let Reply::Map(map) = s.run("HELLO 2 AUTH default pw SETNAME app") else {
        panic!("HELLO answers a map");
    };
    assert_eq!(map[0], Reply::bulk("server"));
    assert_eq!(map[4..6], [Reply::bulk("proto"), Reply::Integer(2)]);
    s.transcript(
        r#"
        > CLIENT GETNAME
        "app"
        > HELLO 4
        (error) NOPROTO unsupported protocol version
        > HELLO 1
        (error) NOPROTO unsupported protocol version
    "#,
    );
    assert!(err(s.run("HELLO 3 SETNAME \"a b\"")).starts_with("ERR Client names cannot"));
    assert!(err(s.run("HELLO two")).starts_with("ERR Protocol version"));
    assert!(err(s.run("HELLO 2 AUTH default")).starts_with("ERR Syntax error in HELLO"));
}

#[test]
fn config_set_requirepass_takes_effect_for_new_connections() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG SET requirepass letmein
        OK
        > CONFIG GET requirepass
        1) "requirepass"
        2) "letmein"
        // This connection was made before: it stays allowed, as in Redis.
        > GET k
        (nil)
    "#,
    );
    let mut later = ClientCtx::new(9);
    let get = [b"GET".to_vec(), b"k".to_vec()];
    let reply = s.engine.execute(&get, &mut later, s.now).reply;
    assert_eq!(err(reply), "NOAUTH Authentication required.");
    assert_eq!(s.run("CONFIG SET requirepass \"\""), Reply::ok());
    let reply = s.engine.execute(&get, &mut later, s.now).reply;
    assert_eq!(reply, Reply::Bulk(None), "an empty password asks for none");
}
