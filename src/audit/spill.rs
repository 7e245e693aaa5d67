//! Facts spilled to temporary partition files, so an analysis of any input size holds only
//! one partition in memory at a time ([`super::check`] and [`super::report`] share it).
//!
//! Each fact goes to the partition its key hashes to ([`Partitioned::partition`]), written as
//! one JSON line; the partitions are then read back one by one. With one partition the facts
//! stay in memory and nothing touches the disk — the same code path, the same results.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A fact that knows its partition: every fact an analysis must see together (the same
/// round, commitment or chain block) hashes to the same partition.
pub trait Partitioned: Serialize + DeserializeOwned {
    /// The partition, `0..n`, of this fact among `n`.
    fn partition(&self, n: usize) -> usize;
}

/// Where the facts go between reading and analysing.
pub enum Spill<F> {
    /// One partition, kept in memory.
    Memory(Vec<F>),
    /// Several partitions, each a file in a temporary directory removed on drop.
    Disk { _dir: tempfile::TempDir, paths: Vec<PathBuf>, writers: Vec<BufWriter<File>> },
}

impl<F: Partitioned> Spill<F> {
    /// `partitions` partitions (in memory when at most 1), the files named `prefix…` in
    /// `temp_dir` (the system's temporary directory when `None`).
    pub fn new(partitions: usize, temp_dir: Option<&Path>, prefix: &str) -> io::Result<Spill<F>> {
        if partitions <= 1 {
            return Ok(Spill::Memory(Vec::new()));
        }
        let dir = match temp_dir {
            Some(d) => tempfile::Builder::new().prefix(prefix).tempdir_in(d)?,
            None => tempfile::Builder::new().prefix(prefix).tempdir()?,
        };
        let paths: Vec<PathBuf> = (0..partitions).map(|i| dir.path().join(format!("part-{i:05}.jsonl"))).collect();
        let writers = paths
            .iter()
            .map(|p| Ok(BufWriter::with_capacity(16 << 10, File::create(p)?)))
            .collect::<io::Result<_>>()?;
        Ok(Spill::Disk { _dir: dir, paths, writers })
    }

    /// Adds one fact to its partition.
    pub fn push(&mut self, fact: F) -> io::Result<()> {
        match self {
            Spill::Memory(v) => v.push(fact),
            Spill::Disk { writers, .. } => {
                let n = writers.len();
                let w = &mut writers[fact.partition(n)];
                serde_json::to_writer(&mut *w, &fact)?;
                w.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    /// Hands each partition's facts to `each`, one partition at a time (each file removed
    /// once read); returns the partition count.
    pub fn for_each_partition<E: From<io::Error>>(
        self,
        mut each: impl FnMut(Vec<F>) -> Result<(), E>,
    ) -> Result<usize, E> {
        match self {
            Spill::Memory(facts) => {
                each(facts)?;
                Ok(1)
            }
            Spill::Disk { _dir, paths, writers } => {
                for w in writers {
                    w.into_inner().map_err(io::IntoInnerError::into_error)?;
                }
                for path in &paths {
                    let mut facts = Vec::new();
                    for line in BufReader::new(File::open(path)?).lines() {
                        facts.push(serde_json::from_str::<F>(&line?).map_err(io::Error::from)?);
                    }
                    std::fs::remove_file(path)?;
                    each(facts)?;
                }
                Ok(paths.len())
            }
        }
    }
}
