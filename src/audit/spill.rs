//! Facts spilled to temporary partition files, so an analysis of any input size holds only
//! one partition in memory at a time ([`super::check`] and [`super::report`] share it).
//!
//! Each fact goes to the partition its key hashes to ([`Partitioned::key`]), written as one
//! JSON line; the partitions are then read back one by one. A partition file larger than
//! [`MAX_PARTITION_FILE_BYTES`] (a skewed key spread, or an input of unknown size read from
//! standard input) is not read whole: it is split again, by the same keys hashed with the
//! next level's salt, into enough sub-partitions to fit, and so on — so the memory of one
//! partition stays bounded whatever the input size. With one partition the facts stay in
//! memory and nothing touches the disk — the same code path, the same results.

use std::collections::hash_map::DefaultHasher;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The largest partition file read back whole (bytes of JSON facts); a larger one is split
/// again. Facts take roughly this much memory again once parsed, so this bounds the memory
/// of the check of one partition.
pub(super) const MAX_PARTITION_FILE_BYTES: u64 = 8 << 20;
/// Splits of one partition before its facts are read whole anyway: only facts of one key
/// (e.g. a commitment reused in millions of rounds) can still exceed the budget then, and
/// they must be checked together.
const MAX_LEVELS: u32 = 4;

/// A fact that knows its key: every fact an analysis must see together (the same round,
/// commitment or chain block) has the same key.
pub(super) trait Partitioned: Serialize + DeserializeOwned {
    /// Feeds the fact's key to `state`.
    fn key<H: Hasher>(&self, state: &mut H);
}

/// The partition, `0..n`, of `fact` at split level `level`.
pub(crate) fn partition_of<F: Partitioned>(fact: &F, n: usize, level: u32) -> usize {
    let mut h = DefaultHasher::new();
    level.hash(&mut h);
    fact.key(&mut h);
    // The remainder is below `n`, a usize: the cast back cannot truncate.
    (h.finish() % n.max(1) as u64) as usize
}

/// Where the facts go between reading and analysing.
pub(super) enum Spill<F> {
    /// One partition, kept in memory.
    Memory(Vec<F>),
    /// Several partitions, each a file in a temporary directory removed on drop.
    Disk(Partitions),
}

/// The partition files of one split level.
pub(super) struct Partitions {
    /// Owns the directory (removed on drop); sub-levels live inside it.
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    level: u32,
    /// The largest partition file read back whole ([`MAX_PARTITION_FILE_BYTES`]).
    budget: u64,
    paths: Vec<PathBuf>,
    writers: Vec<BufWriter<File>>,
    /// Bytes written to each partition: one over the budget is split before it is read.
    counts: Vec<u64>,
    /// The line being written, reused for every fact.
    line: Vec<u8>,
}

impl Partitions {
    fn create(root: &Path, level: u32, n: usize, budget: u64) -> io::Result<Partitions> {
        let paths: Vec<PathBuf> = (0..n).map(|i| root.join(format!("level-{level}-part-{i:05}.jsonl"))).collect();
        let writers =
            paths.iter().map(|p| Ok(BufWriter::with_capacity(4 << 10, File::create(p)?))).collect::<io::Result<_>>()?;
        Ok(Partitions {
            dir: None,
            root: root.to_owned(),
            level,
            budget,
            counts: vec![0; n],
            line: Vec::new(),
            paths,
            writers,
        })
    }

    fn push<F: Partitioned>(&mut self, fact: &F) -> io::Result<()> {
        let i = partition_of(fact, self.writers.len(), self.level);
        self.line.clear();
        serde_json::to_writer(&mut self.line, fact)?;
        self.line.push(b'\n');
        self.writers[i].write_all(&self.line)?;
        self.counts[i] += self.line.len() as u64;
        Ok(())
    }

    /// Hands each partition's facts to `each`; returns the partitions checked (counting the
    /// sub-partitions of a split one).
    fn drain<F: Partitioned, E: From<io::Error>>(
        self,
        each: &mut impl FnMut(&mut dyn Iterator<Item = F>) -> Result<(), E>,
    ) -> Result<usize, E> {
        let Partitions { dir: _dir, root, level, budget, paths, writers, counts, .. } = self;
        for w in writers {
            w.into_inner().map_err(io::IntoInnerError::into_error)?;
        }
        let mut checked = 0;
        for (path, bytes) in paths.iter().zip(counts) {
            let mut lines = BufReader::new(File::open(path)?).lines();
            if bytes > budget && level + 1 < MAX_LEVELS {
                // At most 4096 sub-partitions (a partition file of 4096 budgets).
                let n = bytes.div_ceil(budget).min(4096) as usize;
                let mut sub = Partitions::create(&root, level + 1, n, budget)?;
                for line in lines {
                    sub.push(&serde_json::from_str::<F>(&line?).map_err(io::Error::from)?)?;
                }
                std::fs::remove_file(path)?;
                checked += sub.drain(each)?;
                continue;
            }
            // The facts are parsed as `each` takes them, never all held as one vector; the
            // first error ends the partition and is returned.
            let mut error = None;
            let mut facts = std::iter::from_fn(|| {
                let parsed = lines.next()?.and_then(|l| serde_json::from_str::<F>(&l).map_err(io::Error::from));
                parsed.map_err(|e| error = Some(e)).ok()
            });
            each(&mut facts)?;
            if let Some(e) = error {
                return Err(e.into());
            }
            std::fs::remove_file(path)?;
            checked += 1;
        }
        Ok(checked)
    }
}

impl<F: Partitioned> Spill<F> {
    /// `partitions` partitions (in memory when at most 1), the files named `prefix…` in
    /// `temp_dir` (the system's temporary directory when `None`).
    pub(super) fn new(partitions: usize, temp_dir: Option<&Path>, prefix: &str) -> io::Result<Spill<F>> {
        Spill::with_budget(partitions, temp_dir, prefix, MAX_PARTITION_FILE_BYTES)
    }

    /// [`Spill::new`] with partition files over `budget` bytes split again.
    fn with_budget(partitions: usize, temp_dir: Option<&Path>, prefix: &str, budget: u64) -> io::Result<Spill<F>> {
        if partitions <= 1 {
            return Ok(Spill::Memory(Vec::new()));
        }
        let dir = match temp_dir {
            Some(d) => tempfile::Builder::new().prefix(prefix).tempdir_in(d)?,
            None => tempfile::Builder::new().prefix(prefix).tempdir()?,
        };
        let mut parts = Partitions::create(dir.path(), 0, partitions, budget)?;
        parts.dir = Some(dir);
        Ok(Spill::Disk(parts))
    }

    /// Adds one fact to its partition.
    pub(super) fn push(&mut self, fact: F) -> io::Result<()> {
        match self {
            Spill::Memory(v) => v.push(fact),
            Spill::Disk(parts) => parts.push(&fact)?,
        }
        Ok(())
    }

    /// Hands each partition's facts to `each`, one partition at a time (each file removed
    /// once read); returns the partition count (including the sub-partitions of any
    /// partition that was split again).
    pub(super) fn for_each_partition<E: From<io::Error>>(
        self,
        mut each: impl FnMut(&mut dyn Iterator<Item = F>) -> Result<(), E>,
    ) -> Result<usize, E> {
        match self {
            Spill::Memory(facts) => {
                each(&mut facts.into_iter())?;
                Ok(1)
            }
            Spill::Disk(parts) => parts.drain(&mut each),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    struct Item {
        key: u32,
        pad: String,
    }

    impl Partitioned for Item {
        fn key<H: Hasher>(&self, state: &mut H) {
            self.key.hash(state);
        }
    }

    /// Pushes `items` into `n` partitions (split again over `budget` bytes) and returns, per
    /// partition handed back, its items.
    fn partitions(n: usize, budget: u64, items: Vec<Item>) -> Vec<Vec<Item>> {
        let mut spill = Spill::with_budget(n, None, "reddog-spill-test-", budget).unwrap();
        for i in items {
            spill.push(i).unwrap();
        }
        let mut out = Vec::new();
        let count = spill
            .for_each_partition(|facts| {
                out.push(facts.collect());
                Ok::<(), io::Error>(())
            })
            .unwrap();
        assert_eq!(count, out.len());
        out
    }

    #[test]
    fn every_fact_comes_back_once_with_its_key_in_one_partition() {
        let items = || (0..5000u32).map(|i| Item { key: i % 700, pad: i.to_string() });
        let parts = partitions(7, MAX_PARTITION_FILE_BYTES, items().collect());
        assert_eq!(parts.len(), 7);
        let mut all: Vec<Item> = parts.iter().flatten().map(|i| Item { key: i.key, pad: i.pad.clone() }).collect();
        all.sort();
        let mut want: Vec<Item> = items().collect();
        want.sort();
        assert_eq!(all, want);
        for key in 0..700 {
            assert_eq!(parts.iter().filter(|p| p.iter().any(|i| i.key == key)).count(), 1, "key {key}");
        }
    }

    #[test]
    fn a_partition_over_the_budget_is_split_again_and_keys_stay_together() {
        // Two partitions of ~600 KB of facts each, both over a 256 KB budget: each is split
        // into three sub-partitions, and no partition handed back is over the budget.
        let budget = 256 << 10;
        let pad = "x".repeat(1000);
        let items: Vec<Item> = (0..1200u32).map(|i| Item { key: i % 400, pad: pad.clone() }).collect();
        let parts = partitions(2, budget, items);
        assert_eq!(parts.len(), 6);
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), 1200);
        for p in &parts {
            let bytes: usize = p.iter().map(|i| serde_json::to_vec(i).unwrap().len() + 1).sum();
            assert!(bytes as u64 <= budget, "{bytes} bytes in one partition");
        }
        for key in 0..400 {
            assert_eq!(parts.iter().filter(|p| p.iter().any(|i| i.key == key)).count(), 1, "key {key}");
        }
    }

    #[test]
    fn the_facts_of_one_key_are_read_whole_when_splitting_cannot_help() {
        // One key over the budget: split as far as MAX_LEVELS allows, then read whole.
        let pad = "y".repeat(1000);
        let items: Vec<Item> = (0..600u32).map(|_| Item { key: 7, pad: pad.clone() }).collect();
        let parts = partitions(2, 64 << 10, items);
        let non_empty: Vec<&Vec<Item>> = parts.iter().filter(|p| !p.is_empty()).collect();
        assert_eq!(non_empty.len(), 1);
        assert_eq!(non_empty[0].len(), 600);
    }
}
