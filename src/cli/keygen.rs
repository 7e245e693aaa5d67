//! `reddog keygen`: prints a key ring JSON for `--key-ring-file`, or a ring's public keys.
//!
//! - `reddog keygen [--id ID] [--signing SID]`: a new ring with one fresh key as primary and,
//!   with `--signing`, a fresh Ed25519 signing key with id SID (signed receipts, FAIRNESS.md
//!   4.7);
//! - `reddog keygen --add-to FILE --id ID [--primary]`: FILE's ring with a fresh key added,
//!   made primary only with `--primary` (rotate in two steps: add, roll out; then make it
//!   primary, roll out; drop the old key once its rounds are settled);
//! - `reddog keygen --add-to FILE --signing SID`: FILE's ring with a fresh signing key added
//!   (refused if it has one);
//! - `reddog keygen --public [FILE]`: reads a ring (FILE, or stdin for `-` or nothing) and
//!   prints its public signing key as `ID ed25519 HEX` — never a secret.
//!
//! A ring is printed on stdout, or with `--out FILE` written to FILE created mode 0600
//! whatever the umask (replacing it atomically: `--add-to ring.json --out ring.json` works).
//! `reddog serve` refuses a ring file others may read or write.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use rand::TryRng;
use reddog::service::ReceiptSigner;
use reddog::service::{KeyList, KeyRingFile, SigningEntry, valid_key_id};
use zeroize::Zeroize;

#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Id of the new key: 1-32 characters of [A-Za-z0-9._-]. Default: k<unix seconds>.
    #[arg(long)]
    pub id: Option<String>,
    /// Add the new key to this key ring file's keys (the file is not modified; the result
    /// is printed).
    #[arg(long)]
    pub add_to: Option<PathBuf>,
    /// With --add-to: make the new key the primary.
    #[arg(long, requires = "add_to", conflicts_with = "signing")]
    pub primary: bool,
    /// Also create an Ed25519 signing key with this id (signed receipts); with --add-to, add
    /// only the signing key (a ring holds at most one).
    #[arg(long, value_name = "ID")]
    pub signing: Option<String>,
    /// Print the public signing key of the ring in FILE (`-` or nothing: stdin) as
    /// `ID ed25519 HEX`, and nothing secret.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-",
          conflicts_with_all = ["id", "add_to", "primary", "signing", "out"])]
    pub public: Option<PathBuf>,
    /// Write the ring to FILE, created mode 0600 whatever the umask (replaced atomically if
    /// it exists), instead of printing it.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// 32 fresh bytes from the OS, as hex.
fn fresh_secret() -> anyhow::Result<String> {
    let mut key = [0u8; 32];
    rand::rngs::SysRng.try_fill_bytes(&mut key).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
    let hex_key = hex::encode(key);
    key.zeroize();
    Ok(hex_key)
}

/// A fresh signing key entry `{"id": ID, "secret": "<64 hex>"}`, checked as the engine parses it.
fn signing_entry(id: &str) -> anyhow::Result<SigningEntry> {
    let secret = fresh_secret()?;
    ReceiptSigner::from_hex(id, &mut secret.clone()).map_err(|e| anyhow::anyhow!("--signing: {e}"))?;
    Ok(SigningEntry { id: id.to_string(), secret })
}

pub fn run(args: KeygenArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.public {
        return public(path);
    }
    let id = match args.id {
        Some(id) => id,
        None => format!("k{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs()),
    };
    if !valid_key_id(&id) {
        bail!("--id: {}", reddog::ids::KEY_ID_RULE);
    }
    let ring = match args.add_to {
        None => KeyRingFile {
            primary: id.clone(),
            keys: KeyList(vec![(id, fresh_secret()?)]),
            signing: args.signing.as_deref().map(signing_entry).transpose()?,
        },
        Some(path) => {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            // Validate the existing ring with the engine's own parser first.
            reddog::service::KeyRing::from_json(&text)
                .with_context(|| format!("{} is not a valid key ring", path.display()))?;
            let mut ring: KeyRingFile = serde_json::from_str(&text)?;
            match &args.signing {
                Some(signing) => {
                    if ring.signing.is_some() {
                        bail!("--signing: {} already has a signing key (a ring holds at most one)", path.display());
                    }
                    ring.signing = Some(signing_entry(signing)?);
                }
                None => {
                    if ring.keys.0.iter().any(|(k, _)| *k == id) {
                        bail!("--id: key id {id:?} is already in {}", path.display());
                    }
                    ring.keys.0.push((id.clone(), fresh_secret()?));
                    if args.primary {
                        ring.primary = id;
                    }
                }
            }
            ring
        }
    };
    let text = zeroize::Zeroizing::new(serde_json::to_string_pretty(&ring)? + "\n");
    match &args.out {
        None => print!("{}", text.as_str()),
        Some(path) => write_private(path, text.as_bytes())?,
    }
    Ok(())
}

/// Writes `bytes` to `path` through a new file of mode 0600 in the same directory, renamed
/// over `path` once complete.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let name = path.file_name().with_context(|| format!("--out {}: not a file name", path.display()))?;
    let tmp = path.with_file_name(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = (|| {
        let mut file = options.open(&tmp)?;
        // The mode given to open(2) is masked by the umask; set it exactly.
        #[cfg(unix)]
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("writing the key ring to {}", path.display()))
}

/// `--public`: the ring's public signing key, one line `ID ed25519 HEX`.
fn public(path: &std::path::Path) -> anyhow::Result<()> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading the key ring from stdin")?;
    } else {
        text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    }
    let ring = reddog::service::KeyRing::from_json(&text);
    text.zeroize();
    let ring = ring.context("not a valid key ring")?;
    let Some(signer) = ring.signer() else {
        bail!("the key ring has no signing key (add one with `reddog keygen --add-to FILE --signing ID`)")
    };
    let key = signer.published();
    println!("{} {} {}", key.key_id, key.algorithm, key.public_key_hex);
    Ok(())
}
