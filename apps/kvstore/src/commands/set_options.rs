//! Parsing `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
//!
//! Follows Redis's parser: options in any order and any case, the same
//! expiry option may repeat (the last wins), and conflicting ones (`NX` with
//! `XX`, two different expiry kinds, an expiry with `KEEPTTL`, or an expiry
//! option without its number) are a syntax error. `NX` and `GET` together are
//! allowed, as in Redis 7.

use alloc::vec::Vec;

use super::errors;
use super::expiry_arg::Unit;
use crate::resp::Reply;

/// The options of one `SET`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SetOptions<'a> {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keep_ttl: bool,
    /// The expiry option and its (not yet validated) number.
    pub expire: Option<(Unit, &'a [u8])>,
}

impl<'a> SetOptions<'a> {
    /// Parses the arguments after `SET key value`.
    pub fn parse(options: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut opts = SetOptions::default();
        let mut i = 0;
        while i < options.len() {
            let word = options[i].to_ascii_uppercase();
            let next = options.get(i + 1);
            let unit = match word.as_slice() {
                b"EX" => Some(Unit::Seconds),
                b"PX" => Some(Unit::Millis),
                b"EXAT" => Some(Unit::UnixSeconds),
                b"PXAT" => Some(Unit::UnixMillis),
                _ => None,
            };
            match (word.as_slice(), unit, next) {
                (b"NX", ..) if !opts.xx => opts.nx = true,
                (b"XX", ..) if !opts.nx => opts.xx = true,
                (b"GET", ..) => opts.get = true,
                (b"KEEPTTL", ..) if opts.expire.is_none() => opts.keep_ttl = true,
                (_, Some(unit), Some(number))
                    if !opts.keep_ttl && opts.expire.is_none_or(|(u, _)| u == unit) =>
                {
                    opts.expire = Some((unit, number.as_slice()));
                    i += 1;
                }
                _ => return Err(errors::syntax()),
            }
            i += 1;
        }
        Ok(opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<u8>> {
        text.split_whitespace()
            .map(|w| w.as_bytes().to_vec())
            .collect()
    }

    #[test]
    fn accepted_combinations() {
        assert_eq!(SetOptions::parse(&[]).unwrap(), SetOptions::default());
        let args = words("nx get ex 10");
        let o = SetOptions::parse(&args).unwrap();
        assert!(o.nx && o.get && o.expire == Some((Unit::Seconds, &b"10"[..])));
        let args = words("XX PX 5 PX 7");
        let o = SetOptions::parse(&args).unwrap();
        assert!(
            o.xx && o.expire == Some((Unit::Millis, &b"7"[..])),
            "repeat: last wins"
        );
        let args = words("KEEPTTL XX");
        assert!(SetOptions::parse(&args).unwrap().keep_ttl);
        let args = words("exat 1");
        assert_eq!(
            SetOptions::parse(&args).unwrap().expire,
            Some((Unit::UnixSeconds, &b"1"[..]))
        );
    }

    #[test]
    fn conflicts_are_syntax_errors() {
        for bad in [
            "NX XX",
            "XX NX",
            "EX 1 PX 1",
            "EX 1 KEEPTTL",
            "KEEPTTL PX 1",
            "EX",
            "PX",
            "FOO",
            "EX 1 EXAT 2",
        ] {
            assert_eq!(
                SetOptions::parse(&words(bad)),
                Err(errors::syntax()),
                "{bad}"
            );
        }
    }
}
