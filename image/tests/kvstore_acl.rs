//! ACL users in the guest's kvstore surviving a restart: `ACL SETUSER`
//! and `ACL DELUSER` reach the append-only log (passwords as hashes only),
//! a log rewrite starts with the users, and after a reboot the users log
//! in with their passwords and keep their permissions.

mod common;

use common::kvstore::{ask, first_rewrite, fresh_disk, Guest};
use std::time::Duration;

#[test]
fn acl_users_survive_a_restart_and_a_log_rewrite() {
    let test = "kvstore-acl";
    fresh_disk(test);
    let args = ["appendfsync", "always"];
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let setuser = ["ACL", "SETUSER", "alice", "on", ">alicepw", "~a*", "+@read"];
    assert_eq!(ask(&mut s, &setuser), "+OK");
    assert_eq!(
        ask(&mut s, &["ACL", "SETUSER", "gone", "on", "nopass"]),
        "+OK"
    );
    assert_eq!(ask(&mut s, &["SET", "a1", "v"]), "+OK");
    first_rewrite(&mut s);
    // After the rewrite: records appended to the new log.
    assert_eq!(ask(&mut s, &["ACL", "DELUSER", "gone"]), ":1");
    let bob = ["ACL", "SETUSER", "bob", "on", ">bobpw", "allkeys", "+set"];
    assert_eq!(ask(&mut s, &bob), "+OK");
    assert_eq!(
        ask(&mut s, &["ACL", "SETUSER", "default", ">defaultpw"]),
        "+OK"
    );
    guest.kill();

    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(
        ask(&mut s, &["GET", "a1"]),
        "-NOAUTH Authentication required."
    );
    assert_eq!(ask(&mut s, &["AUTH", "alice", "alicepw"]), "+OK");
    assert_eq!(ask(&mut s, &["GET", "a1"]), "v");
    assert_eq!(
        ask(&mut s, &["SET", "a1", "w"]),
        "-NOPERM this user has no permissions to run the 'set' command"
    );
    assert_eq!(ask(&mut s, &["AUTH", "bob", "bobpw"]), "+OK");
    assert_eq!(ask(&mut s, &["SET", "b", "x"]), "+OK");
    assert!(ask(&mut s, &["AUTH", "gone", "x"]).starts_with("-WRONGPASS"));
    assert_eq!(ask(&mut s, &["AUTH", "defaultpw"]), "+OK");
    assert_eq!(
        ask(&mut s, &["ACL", "DRYRUN", "gone", "ping"]),
        "-ERR User 'gone' not found"
    );
    guest.kill();
}
