//! Server seeds and their commitments.

use std::fmt;

use rand::TryRng;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::FairnessError;

/// A 32-byte server seed. Secret until the round it served is settled.
///
/// `Debug` prints `ServerSeed(<redacted>)`; there is deliberately no `Display`.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct ServerSeed([u8; 32]);

impl ServerSeed {
    /// A fresh seed from the operating system's CSPRNG.
    pub fn generate() -> Result<ServerSeed, FairnessError> {
        let mut bytes = [0u8; 32];
        rand::rngs::SysRng.try_fill_bytes(&mut bytes).map_err(FairnessError::RandomSource)?;
        Ok(ServerSeed(bytes))
    }

    pub const fn from_bytes(bytes: [u8; 32]) -> ServerSeed {
        ServerSeed(bytes)
    }

    /// The seed, for sealing into a token or revealing after settlement.
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex of the seed: only for the reveal.
    pub fn reveal_hex(&self) -> String {
        hex32(&self.0)
    }

    /// SHA-256 of the 32 seed bytes.
    pub fn commitment(&self) -> Commitment {
        Commitment(Sha256::digest(self.0).into())
    }
}

impl fmt::Debug for ServerSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerSeed(<redacted>)")
    }
}

/// SHA-256 of a server seed; shown to the player before the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Commitment(pub [u8; 32]);

impl fmt::Display for Commitment {
    /// Lower-case hex (written from a stack buffer: audit lines format it on every call).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_hex32(&self.0, f)
    }
}

impl Commitment {
    /// Lower-case hex, as shown to the player.
    pub fn to_hex(&self) -> String {
        hex32(&self.0)
    }
}

/// Lower-case hex of 32 bytes. `hex::encode_to_slice` writes bytes directly; `hex::encode`
/// goes through a char iterator and is several times slower on the RPC path.
/// Writes the lower-case hex of 32 bytes without allocating.
pub(crate) fn fmt_hex32(bytes: &[u8; 32], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut out = [0u8; 64];
    let _ = hex::encode_to_slice(bytes, &mut out);
    f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
}

pub(crate) fn hex32(bytes: &[u8; 32]) -> String {
    let mut out = [0u8; 64];
    // Both cannot fail: the output is exactly twice the input, and hex digits are ASCII.
    let _ = hex::encode_to_slice(bytes, &mut out);
    // Hex digits are ASCII: no lossy scan needed, one allocation of the exact size.
    let mut s = String::with_capacity(64);
    s.push_str(std::str::from_utf8(&out).unwrap_or_default());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitment_is_sha256_of_the_seed_bytes() {
        // sha256 of 32 zero bytes
        let c = ServerSeed::from_bytes([0; 32]).commitment();
        assert_eq!(c.to_string(), "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925");
    }

    #[test]
    fn debug_never_shows_the_seed() {
        let s = ServerSeed::from_bytes([0xab; 32]);
        assert!(!format!("{s:?}").contains("ab"));
    }

    #[test]
    fn generated_seeds_differ() {
        assert_ne!(ServerSeed::generate().unwrap(), ServerSeed::generate().unwrap());
    }
}
