//! The commands of each family and their arguments, written once in the
//! shapes of [`crate::draw`], for both profiles.

pub(crate) mod acl;
pub(crate) mod bits;
pub(crate) mod geo;
pub(crate) mod hashes;
pub(crate) mod hll;
pub(crate) mod keys;
pub(crate) mod lists;
pub(crate) mod scripts;
pub(crate) mod server;
pub(crate) mod sets;
pub(crate) mod streams;
pub(crate) mod strings;
pub(crate) mod zsets;
