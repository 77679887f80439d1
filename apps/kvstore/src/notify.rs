//! Keyspace notifications (`notify-keyspace-events`): changes to keys
//! published on pub/sub channels, as Redis does.
//!
//! ```text
//!  a command changes `foo` in db 0 ──► Exec::notify(STRING, "set", foo)
//!       class enabled? ──no──► nothing
//!       K ──► PUBLISH __keyspace@0__:foo  set
//!       E ──► PUBLISH __keyevent@0__:set  foo
//! ```
//!
//! The classes are the characters of the setting: `g` generic (DEL,
//! EXPIRE, RENAME ...), `$` strings, `l` lists, `s` sets, `h` hashes, `z`
//! sorted sets, `x` expired, `e` evicted, `t` streams, `m` key misses,
//! `d` module events, `n` new keys, `A` for `g$lshzxetd`; `K` and `E` say
//! on which channels. Nothing is published unless a class and a channel
//! kind are both on, which is the default (an empty setting).

/// Notifications on `__keyspace@<db>__:<key>` channels.
pub const KEYSPACE: u16 = 1 << 0;
/// Notifications on `__keyevent@<db>__:<event>` channels.
pub const KEYEVENT: u16 = 1 << 1;
/// Commands on any type: DEL, EXPIRE, RENAME, COPY, MOVE ...
pub const GENERIC: u16 = 1 << 2;
/// String commands.
pub const STRING: u16 = 1 << 3;
/// List commands.
pub const LIST: u16 = 1 << 4;
/// Set commands.
pub const SET: u16 = 1 << 5;
/// Hash commands.
pub const HASH: u16 = 1 << 6;
/// Sorted-set commands.
pub const ZSET: u16 = 1 << 7;
/// A key removed because its time ran out.
pub const EXPIRED: u16 = 1 << 8;
/// A key removed to free memory under `maxmemory` (an eviction policy,
/// see `commands::evict`).
pub const EVICTED: u16 = 1 << 9;
/// Stream commands (`XADD`, `XDEL`, `XGROUP CREATE`, ...).
pub const STREAM: u16 = 1 << 10;
/// A read of a missing key.
pub const KEY_MISS: u16 = 1 << 11;
/// Module events (kvstore has no modules; accepted, never sent).
pub const MODULE: u16 = 1 << 12;
/// A key created.
pub const NEW: u16 = 1 << 13;
/// What `A` stands for.
pub const ALL: u16 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The class characters in the order `CONFIG GET` writes them.
const CLASSES: &[(char, u16)] = &[
    ('g', GENERIC),
    ('$', STRING),
    ('l', LIST),
    ('s', SET),
    ('h', HASH),
    ('z', ZSET),
    ('x', EXPIRED),
    ('e', EVICTED),
    ('t', STREAM),
    ('d', MODULE),
];

/// The flags of a `notify-keyspace-events` value; `None` for an unknown
/// character.
pub fn parse(value: &[u8]) -> Option<u16> {
    value.iter().try_fold(0, |flags, &c| {
        let flag = match c {
            b'A' => ALL,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b'm' => KEY_MISS,
            b'n' => NEW,
            _ => CLASSES.iter().find(|(ch, _)| *ch as u8 == c)?.1,
        };
        Some(flags | flag)
    })
}

/// The setting's text: `A` or the class characters, then `m`, `n`, `K`,
/// `E` (what `CONFIG GET` answers).
pub fn format(flags: u16) -> alloc::string::String {
    let mut out = alloc::string::String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        out.extend(
            CLASSES
                .iter()
                .filter(|(_, f)| flags & f != 0)
                .map(|(c, _)| c),
        );
    }
    for (c, f) in [
        ('m', KEY_MISS),
        ('n', NEW),
        ('K', KEYSPACE),
        ('E', KEYEVENT),
    ] {
        if flags & f != 0 {
            out.push(c);
        }
    }
    out
}

/// Publishes `event` on `key` of database `db` to `pubsub`, if `flags`
/// enable its `class` and a channel kind.
pub fn publish(
    pubsub: &mut crate::pubsub::PubSub,
    flags: u16,
    class: u16,
    event: &str,
    key: &[u8],
    db: usize,
) {
    if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 {
        return;
    }
    if flags & KEYSPACE != 0 {
        let mut channel = alloc::format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        pubsub.publish(&channel, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let channel = alloc::format!("__keyevent@{db}__:{event}");
        pubsub.publish(channel.as_bytes(), key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_back_as_redis_writes_them() {
        for (set, get) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("Exn", "xnE"),
            ("", ""),
        ] {
            assert_eq!(format(parse(set.as_bytes()).unwrap()), get, "{set}");
        }
        assert_eq!(parse(b"Kq"), None);
    }

    #[test]
    fn nothing_is_published_without_a_class_and_a_channel_kind() {
        let mut pubsub = crate::pubsub::PubSub::default();
        pubsub.psubscribe(1, b"*");
        publish(&mut pubsub, KEYSPACE, STRING, "set", b"k", 0);
        publish(&mut pubsub, STRING, STRING, "set", b"k", 0);
        publish(&mut pubsub, KEYSPACE | HASH, STRING, "set", b"k", 0);
        assert!(pubsub.take_messages().is_empty());
        publish(
            &mut pubsub,
            KEYSPACE | KEYEVENT | STRING,
            STRING,
            "set",
            b"k",
            3,
        );
        let sent: Vec<_> = pubsub.take_messages().into_iter().map(|(_, m)| m).collect();
        assert_eq!(sent.len(), 2);
        assert!(sent[0].ends_with(b"$16\r\n__keyspace@3__:k\r\n$3\r\nset\r\n"));
        assert!(sent[1].ends_with(b"$18\r\n__keyevent@3__:set\r\n$1\r\nk\r\n"));
    }
}
