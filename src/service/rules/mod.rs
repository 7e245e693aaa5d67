//! The rules a process serves.
//!
//! - [`tables`]: the named tables, with their currencies;
//! - [`certified`]: the certified-rules file and how the served tables compare with it;
//! - [`get_rules`]: the `GetRules` answer, computed once at startup.

pub(crate) mod certified;
pub(crate) mod get_rules;
pub(crate) mod tables;
