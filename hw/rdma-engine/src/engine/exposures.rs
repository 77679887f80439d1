//! What this node's libOS has exposed to other nodes, and the check every
//! remote request passes before it touches this node's memory: the remote
//! key must name an exposure, the range must lie inside it, and the
//! exposure must grant the access (what a NIC does with an rkey).
//!
//! ```text
//!  EXPOSE(va, len, rights) ──▶ key (random, never 0) → {va..va+len, rights}
//!  REVOKE(key)             ──▶ forgotten: every later request with it fails
//!  WRITE First/Only, READ Request (RETH: R_Key, va, len)
//!      ──▶ check(key, va..va+len, write?) ── ok ──▶ SMMU (faults as ever)
//!                                         └─ refused ─▶ NAK remote access error
//! ```
//!
//! Exposing pins and touches nothing: the check is on addresses only, and
//! the pages behind an exposed range fault and resolve like any other.

use hw::rdma::wire::{EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;

/// Exposures one node holds at once; an EXPOSE past this is refused.
pub const MAX_EXPOSURES: usize = 4096;

/// Revoked keys remembered, so that a new exposure never gets a key a
/// packet still on its way may carry (the oldest is forgotten first).
pub const RETIRED_KEYS: usize = 1 << 16;

/// Why a remote request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The key names no exposure (never issued, or revoked).
    UnknownKey,
    /// The range is not inside the exposed one.
    OutOfBounds,
    /// The exposure does not grant this access.
    NotGranted,
}

/// Why an EXPOSE was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExposeError {
    /// Empty, wrapping, no rights or unknown rights.
    Invalid,
    /// [`MAX_EXPOSURES`] are held already.
    Full,
}

/// One exposed range and its rights.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Exposure {
    range: Range<u64>,
    rights: u8,
}

/// The exposures of one node, by key.
#[derive(Default)]
pub struct Exposures {
    by_key: HashMap<u32, Exposure>,
    retired: HashSet<u32>,
    retired_order: VecDeque<u32>,
}

impl Exposures {
    /// Records `len` bytes at `va` with `rights` under the key `new_key`
    /// draws (given a test of keys in use); returns the key.
    pub fn expose(
        &mut self,
        va: u64,
        len: u64,
        rights: u8,
        new_key: impl FnOnce(&dyn Fn(u32) -> bool) -> u32,
    ) -> Result<u32, ExposeError> {
        let known = EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE;
        let end = va.checked_add(len).ok_or(ExposeError::Invalid)?;
        if len == 0 || rights == 0 || rights & !known != 0 {
            return Err(ExposeError::Invalid);
        }
        if self.by_key.len() >= MAX_EXPOSURES {
            return Err(ExposeError::Full);
        }
        let key = new_key(&|k| self.by_key.contains_key(&k) || self.retired.contains(&k));
        self.by_key.insert(
            key,
            Exposure {
                range: va..end,
                rights,
            },
        );
        Ok(key)
    }

    /// Withdraws `key`; whether it named an exposure.
    pub fn revoke(&mut self, key: u32) -> bool {
        if self.by_key.remove(&key).is_none() {
            return false;
        }
        if self.retired_order.len() == RETIRED_KEYS {
            if let Some(old) = self.retired_order.pop_front() {
                self.retired.remove(&old);
            }
        }
        self.retired.insert(key);
        self.retired_order.push_back(key);
        true
    }

    /// Whether a peer holding `key` may read (or, `write`, write) `range`.
    pub fn check(&self, key: u32, range: Range<u64>, write: bool) -> Result<(), Refusal> {
        let e = self.by_key.get(&key).ok_or(Refusal::UnknownKey)?;
        if range.start > range.end || range.start < e.range.start || range.end > e.range.end {
            return Err(Refusal::OutOfBounds);
        }
        let needed = if write {
            EXPOSE_REMOTE_WRITE
        } else {
            EXPOSE_REMOTE_READ
        };
        if e.rights & needed == 0 {
            return Err(Refusal::NotGranted);
        }
        Ok(())
    }

    /// The table as it is (tests that rebuild an engine keep its keys).
    #[cfg(test)]
    pub(crate) fn by_key_for_tests(&self) -> Vec<(u32, Range<u64>, u8)> {
        self.by_key
            .iter()
            .map(|(&k, e)| (k, e.range.clone(), e.rights))
            .collect()
    }

    /// Puts back what [`Exposures::by_key_for_tests`] took.
    #[cfg(test)]
    pub(crate) fn restore_for_tests(&mut self, keys: Vec<(u32, Range<u64>, u8)>) {
        for (k, range, rights) in keys {
            self.by_key.insert(k, Exposure { range, rights });
        }
    }

    /// How many exposures are held.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: u8 = EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE;

    fn fixed(k: u32) -> impl FnOnce(&dyn Fn(u32) -> bool) -> u32 {
        move |taken| {
            assert!(!taken(k));
            k
        }
    }

    #[test]
    fn a_key_reaches_exactly_its_range_with_its_rights() {
        let mut x = Exposures::default();
        let k = x
            .expose(0x1000, 0x2000, EXPOSE_REMOTE_READ, fixed(7))
            .unwrap();
        assert_eq!(k, 7);
        assert_eq!(x.check(7, 0x1000..0x3000, false), Ok(()));
        assert_eq!(x.check(7, 0x2fff..0x3000, false), Ok(()));
        assert_eq!(x.check(7, 0x0fff..0x1001, false), Err(Refusal::OutOfBounds));
        assert_eq!(x.check(7, 0x2000..0x3001, false), Err(Refusal::OutOfBounds));
        assert_eq!(x.check(7, 0x1000..0x1008, true), Err(Refusal::NotGranted));
        assert_eq!(x.check(8, 0x1000..0x1008, false), Err(Refusal::UnknownKey));
        assert_eq!(x.check(0, 0x1000..0x1008, false), Err(Refusal::UnknownKey));
    }

    #[test]
    fn a_revoked_key_reaches_nothing() {
        let mut x = Exposures::default();
        x.expose(0x1000, 0x1000, RW, fixed(9)).unwrap();
        assert!(x.revoke(9));
        assert!(!x.revoke(9));
        assert_eq!(x.check(9, 0x1000..0x1001, true), Err(Refusal::UnknownKey));
        assert!(x.is_empty());
        // A revoked key is never handed out again.
        x.expose(0x1000, 0x1000, RW, |taken| {
            assert!(taken(9));
            10
        })
        .unwrap();
    }

    #[test]
    fn nonsense_exposures_are_refused_and_the_table_is_bounded() {
        let mut x = Exposures::default();
        let never = |_: &dyn Fn(u32) -> bool| -> u32 { unreachable!("no key for a refusal") };
        assert_eq!(x.expose(0, 0, RW, never), Err(ExposeError::Invalid));
        assert_eq!(x.expose(u64::MAX, 2, RW, never), Err(ExposeError::Invalid));
        assert_eq!(x.expose(0, 8, 0, never), Err(ExposeError::Invalid));
        assert_eq!(x.expose(0, 8, 0x80, never), Err(ExposeError::Invalid));
        for k in 1..=MAX_EXPOSURES as u32 {
            x.expose(0, 8, RW, fixed(k)).unwrap();
        }
        assert_eq!(x.expose(0, 8, RW, never), Err(ExposeError::Full));
        assert_eq!(x.len(), MAX_EXPOSURES);
    }
}
