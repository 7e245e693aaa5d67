//! `reddog keygen`: prints a key ring JSON for `--key-ring-file`.
//!
//! - `reddog keygen [--id ID]`: a new ring with one fresh key as primary;
//! - `reddog keygen --add-to FILE --id ID [--primary]`: FILE's ring with a fresh key added,
//!   made primary only with `--primary` (rotate in two steps: add, roll out; then make it
//!   primary, roll out; drop the old key once its rounds are settled).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use rand::TryRng;
use reddog::service::token::valid_key_id;
use serde::{Deserialize, Serialize};

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
    #[arg(long, requires = "add_to")]
    pub primary: bool,
}

#[derive(Serialize, Deserialize)]
struct RingFile {
    primary: String,
    keys: BTreeMap<String, String>,
    /// The optional Ed25519 signing key, kept as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signing: Option<serde_json::Value>,
}

pub fn run(args: KeygenArgs) -> anyhow::Result<()> {
    let id = match args.id {
        Some(id) => id,
        None => format!("k{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs()),
    };
    if !valid_key_id(&id) {
        bail!("--id: key ids are 1-32 characters of [A-Za-z0-9._-]");
    }
    let mut key = [0u8; 32];
    rand::rngs::SysRng.try_fill_bytes(&mut key).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
    let hex_key = hex::encode(key);
    let ring = match args.add_to {
        None => RingFile { primary: id.clone(), keys: BTreeMap::from([(id, hex_key)]), signing: None },
        Some(path) => {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            // Validate the existing ring with the engine's own parser first.
            reddog::service::KeyRing::from_json(&text)
                .with_context(|| format!("{} is not a valid key ring", path.display()))?;
            let mut ring: RingFile = serde_json::from_str(&text)?;
            if ring.keys.contains_key(&id) {
                bail!("--id: key id {id:?} is already in {}", path.display());
            }
            ring.keys.insert(id.clone(), hex_key);
            if args.primary {
                ring.primary = id;
            }
            ring
        }
    };
    println!("{}", serde_json::to_string_pretty(&ring)?);
    Ok(())
}
