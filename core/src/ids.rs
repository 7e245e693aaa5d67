//! Ids and size limits, one definition each: the API's request checks, the token budget,
//! the reveal grammar, the key ring and the table configuration all use these.
//!
//! | value | rule |
//! |---|---|
//! | round id | 1 to [`MAX_ROUND_ID_BYTES`] bytes of UTF-8, no control characters |
//! | table id | 1 to [`MAX_TABLE_ID_BYTES`] bytes of `[A-Za-z0-9._-]` |
//! | key id (token keys, signing keys) | 1 to [`MAX_KEY_ID_BYTES`] bytes of `[A-Za-z0-9._-]` |
//! | replica id (audit records) | 1 to [`MAX_REPLICA_ID_BYTES`] printable ASCII characters, no spaces |
//! | client seed | 1 to [`MAX_CLIENT_SEED_BYTES`] bytes of UTF-8 |
//! | currency | three ASCII capital letters (ISO 4217), minor-unit exponent 0 to [`MAX_MINOR_UNIT_EXPONENT`] |
//!
//! Where a value may be left empty (an optional round id, the default table), the caller
//! decides that before checking.

/// Longest client seed, in bytes of UTF-8.
pub const MAX_CLIENT_SEED_BYTES: usize = 1024;
/// Longest platform round id, in bytes of UTF-8.
pub const MAX_ROUND_ID_BYTES: usize = 128;
/// Longest table id, in bytes.
pub const MAX_TABLE_ID_BYTES: usize = 64;
/// Longest replica id, in bytes.
pub const MAX_REPLICA_ID_BYTES: usize = 128;
/// Longest key id, in bytes.
pub const MAX_KEY_ID_BYTES: usize = 32;
/// The key id rule, as errors state it.
pub const KEY_ID_RULE: &str = "key ids are 1-32 characters of [A-Za-z0-9._-]";
/// Bytes of an ISO 4217 alphabetic code.
pub const CURRENCY_CODE_LEN: usize = 3;
/// Largest minor-unit exponent of a currency (ISO 4217 uses 0 to 4).
pub const MAX_MINOR_UNIT_EXPONENT: u8 = 4;

/// Why a value is not a valid id, seed or currency code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Empty where a value is required.
    #[error("must not be empty")]
    Empty,
    /// Longer than the limit.
    #[error("at most {max} bytes")]
    TooLong { len: usize, max: usize },
    /// A byte outside `[A-Za-z0-9._-]` in a table or key id.
    #[error("only the characters A-Z a-z 0-9 . _ -")]
    NotAnIdCharacter,
    /// A control character in a round id.
    #[error("must not contain control characters")]
    ControlCharacter,
    /// A byte that is not printable ASCII (or is a space) in a replica id.
    #[error("only printable ASCII characters without spaces")]
    NotPrintableAscii,
    /// Not three ASCII capital letters.
    #[error("not an ISO 4217 alphabetic code (three capital letters, e.g. EUR, USD, JPY)")]
    NotACurrencyCode,
}

/// Whether `b` may appear in a table or key id: `[A-Za-z0-9._-]`.
pub fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

fn length(s: &str, max: usize) -> Result<(), IdError> {
    match s.len() {
        0 => Err(IdError::Empty),
        len if len > max => Err(IdError::TooLong { len, max }),
        _ => Ok(()),
    }
}

fn id(s: &str, max: usize) -> Result<(), IdError> {
    length(s, max)?;
    if s.bytes().all(is_id_byte) { Ok(()) } else { Err(IdError::NotAnIdCharacter) }
}

/// A platform round id: 1 to [`MAX_ROUND_ID_BYTES`] bytes, no control characters.
pub fn check_round_id(s: &str) -> Result<(), IdError> {
    length(s, MAX_ROUND_ID_BYTES)?;
    if s.chars().any(char::is_control) { Err(IdError::ControlCharacter) } else { Ok(()) }
}

/// A table id: 1 to [`MAX_TABLE_ID_BYTES`] bytes of `[A-Za-z0-9._-]`.
pub fn check_table_id(s: &str) -> Result<(), IdError> {
    id(s, MAX_TABLE_ID_BYTES)
}

/// A key id: 1 to [`MAX_KEY_ID_BYTES`] bytes of `[A-Za-z0-9._-]`.
pub fn check_key_id(s: &str) -> Result<(), IdError> {
    id(s, MAX_KEY_ID_BYTES)
}

/// A replica id: 1 to [`MAX_REPLICA_ID_BYTES`] printable ASCII characters, no spaces.
pub fn check_replica_id(s: &str) -> Result<(), IdError> {
    length(s, MAX_REPLICA_ID_BYTES)?;
    if s.bytes().all(|b| b.is_ascii_graphic()) { Ok(()) } else { Err(IdError::NotPrintableAscii) }
}

/// A client seed: 1 to [`MAX_CLIENT_SEED_BYTES`] bytes (a `&str` is UTF-8 already).
pub fn check_client_seed(s: &str) -> Result<(), IdError> {
    length(s, MAX_CLIENT_SEED_BYTES)
}

/// An ISO 4217 alphabetic code: three ASCII capital letters.
pub fn check_currency_code(s: &str) -> Result<(), IdError> {
    if s.len() == CURRENCY_CODE_LEN && s.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(IdError::NotACurrencyCode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_id_is_one_to_64_bytes_of_letters_digits_dot_underscore_dash() {
        assert_eq!(check_table_id("vip-1.eur_2"), Ok(()));
        assert_eq!(check_table_id(&"t".repeat(MAX_TABLE_ID_BYTES)), Ok(()));
        assert_eq!(check_table_id(""), Err(IdError::Empty));
        assert_eq!(check_table_id(&"t".repeat(65)), Err(IdError::TooLong { len: 65, max: 64 }));
        for bad in ["a b", "a/b", "é", "a\n"] {
            assert_eq!(check_table_id(bad), Err(IdError::NotAnIdCharacter), "{bad:?}");
        }
    }

    #[test]
    fn a_key_id_follows_the_table_id_rule_with_a_32_byte_limit() {
        assert_eq!(check_key_id(&"k".repeat(32)), Ok(()));
        assert_eq!(check_key_id(&"k".repeat(33)), Err(IdError::TooLong { len: 33, max: 32 }));
        assert_eq!(check_key_id("k 1"), Err(IdError::NotAnIdCharacter));
    }

    #[test]
    fn a_round_id_may_hold_any_text_but_control_characters() {
        assert_eq!(check_round_id("round 7 / é"), Ok(()));
        assert_eq!(check_round_id("a\u{7}b"), Err(IdError::ControlCharacter));
        assert_eq!(check_round_id(&"r".repeat(129)), Err(IdError::TooLong { len: 129, max: 128 }));
        assert_eq!(check_round_id(""), Err(IdError::Empty));
    }

    #[test]
    fn a_replica_id_is_printable_ascii_without_spaces() {
        assert_eq!(check_replica_id("eu-west/1"), Ok(()));
        assert_eq!(check_replica_id("a b"), Err(IdError::NotPrintableAscii));
        assert_eq!(check_replica_id(&"r".repeat(129)), Err(IdError::TooLong { len: 129, max: 128 }));
    }

    #[test]
    fn a_client_seed_is_counted_in_bytes_not_characters() {
        assert_eq!(check_client_seed(&"\u{10ffff}".repeat(256)), Ok(()));
        assert_eq!(check_client_seed(&"é".repeat(513)), Err(IdError::TooLong { len: 1026, max: 1024 }));
    }

    #[test]
    fn a_currency_code_is_three_capital_letters() {
        assert_eq!(check_currency_code("EUR"), Ok(()));
        for bad in ["eur", "EU", "EURO", "E1R"] {
            assert_eq!(check_currency_code(bad), Err(IdError::NotACurrencyCode), "{bad}");
        }
    }
}
