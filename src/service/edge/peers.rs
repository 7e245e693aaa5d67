//! Fair shares by peer: who a connection belongs to, what each peer holds, and the penalty of
//! a peer whose connections were closed for not reading their answers.
//!
//! - **The peer** ([`PeerKey`]) is the client certificate's identity on a mutual-TLS
//!   connection, otherwise the remote IP address (an IPv6 address by its /64 prefix, what one
//!   host is usually given). Never a header: any client could set one. Behind a mesh sidecar
//!   every connection comes from the sidecar, so all clients are one peer
//!   (docs/OPERATIONS.md, "Transport limits", says what holds then).
//! - **Shares.** Each [`Peer`] counts its connections past the handshake and the in-flight
//!   slots its calls hold (`transport` and `guard` take and give them back): one peer with many
//!   connections gets one peer's share of the slots, and at the connection cap a newcomer
//!   displaces a connection of the peer holding the most.
//! - **Penalty.** A peer one of whose connections was closed for leaving its answers unread
//!   ([`Peer::strike`]) waits: for 1 s after the first offence, doubling with each new one up
//!   to [`MAX_PENALTY`], forgiven [`FORGIVE_AFTER`] after the last, its calls get no slot and
//!   its new connections are held unread until the penalty ends ([`MAX_HELD`] at most; more
//!   are closed at once), so a client that reconnects at once waits instead of spinning.
//!   Offences within [`EPISODE`] of each other (several connections closed in one sweep)
//!   count once. A reconnecting non-reader thus holds slots for a delivery deadline per
//!   penalty, not all the time.
//! - **Bounded memory.** A peer is kept while it has a connection, and afterwards only while
//!   it is penalized or not yet forgiven, at most [`MAX_REMEMBERED`] such peers (the
//!   longest-forgiven go first): a few hundred bytes each.
//!
//! Time is passed in (milliseconds on the transport's monotonic clock), so the rules are
//! tested without waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Who a connection belongs to (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PeerKey {
    /// An IPv4 address (an IPv4-mapped IPv6 address included).
    V4([u8; 4]),
    /// The first 64 bits of an IPv6 address.
    V6([u8; 8]),
    /// The SHA-256 of the client certificate (DER) on a mutual-TLS connection.
    Identity([u8; 32]),
}

impl PeerKey {
    /// The peer of a connection from `ip`.
    pub(crate) fn of_ip(ip: IpAddr) -> PeerKey {
        match ip {
            IpAddr::V4(v4) => PeerKey::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PeerKey::V4(v4.octets()),
                None => {
                    let mut prefix = [0u8; 8];
                    prefix.copy_from_slice(&v6.octets()[..8]);
                    PeerKey::V6(prefix)
                }
            },
        }
    }

    /// The peer presenting the client certificate `der`.
    pub(crate) fn of_certificate(der: &[u8]) -> PeerKey {
        PeerKey::Identity(Sha256::digest(der).into())
    }
}

/// The first penalty; each new offence doubles it.
pub(crate) const FIRST_PENALTY: Duration = Duration::from_secs(1);
/// The longest penalty.
pub(crate) const MAX_PENALTY: Duration = Duration::from_secs(64);
/// Offences closer together than this count once.
pub(crate) const EPISODE: Duration = Duration::from_secs(2);
/// A peer with no offence for this long starts again from [`FIRST_PENALTY`].
pub(crate) const FORGIVE_AFTER: Duration = Duration::from_secs(300);
/// Peers without a connection remembered for their penalty, at most.
pub(crate) const MAX_REMEMBERED: usize = 4096;
/// New connections of a penalized peer held unread until its penalty ends, at most; more are
/// closed at once.
pub(crate) const MAX_HELD: usize = 16;

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A peer's offences (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Offences {
    count: u32,
    last_ms: u64,
}

impl Offences {
    /// Records an offence at `now_ms`; the penalty it earns, or `None` when it belongs to the
    /// episode of the last one.
    fn record(&mut self, now_ms: u64) -> Option<Duration> {
        if self.count > 0 && now_ms < self.last_ms.saturating_add(ms(EPISODE)) {
            return None;
        }
        if self.forgiven(now_ms) {
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        self.last_ms = now_ms;
        let doublings = (self.count - 1).min(16);
        Some(FIRST_PENALTY.saturating_mul(1 << doublings).min(MAX_PENALTY))
    }

    fn forgiven(&self, now_ms: u64) -> bool {
        self.count == 0 || now_ms >= self.last_ms.saturating_add(ms(FORGIVE_AFTER))
    }
}

/// One peer's connections, slots and penalty.
#[derive(Debug)]
pub(crate) struct Peer {
    key: PeerKey,
    /// Connections past the handshake (changed under the table's lock).
    connections: AtomicUsize,
    /// In-flight slots its calls hold.
    admitted: AtomicUsize,
    /// The end of its penalty (0: none), read on every call.
    penalized_until_ms: AtomicU64,
    offences: Mutex<Offences>,
    /// New connections held unread until its penalty ends.
    held: AtomicUsize,
}

impl Peer {
    fn new(key: PeerKey) -> Peer {
        Peer {
            key,
            connections: AtomicUsize::new(0),
            admitted: AtomicUsize::new(0),
            penalized_until_ms: AtomicU64::new(0),
            offences: Mutex::new(Offences::default()),
            held: AtomicUsize::new(0),
        }
    }

    /// Counts one more of its new connections held until its penalty ends, unless
    /// [`MAX_HELD`] are already (then the connection is closed instead); the guard gives it
    /// back.
    pub(crate) fn hold(self: &Arc<Self>) -> Option<Held> {
        if self.held.fetch_add(1, Ordering::AcqRel) >= MAX_HELD {
            self.held.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Held(self.clone()))
    }

    /// Who it is.
    pub(crate) fn key(&self) -> PeerKey {
        self.key
    }

    /// Its connections past the handshake.
    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    /// What is left of its penalty at `now_ms`, if any.
    pub(crate) fn penalty_left(&self, now_ms: u64) -> Option<Duration> {
        let until = self.penalized_until_ms.load(Ordering::Acquire);
        (until > now_ms).then(|| Duration::from_millis(until - now_ms))
    }

    /// Takes one slot for the peer unless it holds as many as are still `free` (so however
    /// many peers take slots greedily, some stay free for a newcomer: with `n` of them, about
    /// `free / (n + 1)`); false when it may not.
    pub(crate) fn take_slot(&self, free: usize) -> bool {
        if self.admitted.fetch_add(1, Ordering::AcqRel) >= free {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Gives back a slot taken with [`Self::take_slot`].
    pub(crate) fn give_slot(&self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }

    /// Records that one of its connections was closed for leaving answers unread at `now_ms`;
    /// the penalty that started, if this is a new offence.
    pub(crate) fn strike(&self, now_ms: u64) -> Option<Duration> {
        let mut offences = self.offences.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let penalty = offences.record(now_ms)?;
        self.penalized_until_ms.store(now_ms.saturating_add(ms(penalty)), Ordering::Release);
        Some(penalty)
    }

    fn forgiven(&self, now_ms: u64) -> bool {
        self.offences.lock().unwrap_or_else(std::sync::PoisonError::into_inner).forgiven(now_ms)
            && self.penalty_left(now_ms).is_none()
    }

    fn last_offence_ms(&self) -> u64 {
        self.offences.lock().unwrap_or_else(std::sync::PoisonError::into_inner).last_ms
    }
}

/// One new connection of a penalized peer held unread (see [`Peer::hold`]).
#[derive(Debug)]
pub(crate) struct Held(Arc<Peer>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The peers of one listener (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Peers {
    map: Mutex<HashMap<PeerKey, Arc<Peer>>>,
}

impl Peers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PeerKey, Arc<Peer>>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The peer `key` if it is known (has a connection or is remembered for a penalty).
    pub(crate) fn get(&self, key: &PeerKey) -> Option<Arc<Peer>> {
        self.map().get(key).cloned()
    }

    /// The peer `key` with one more connection.
    pub(crate) fn join(&self, key: PeerKey) -> Arc<Peer> {
        let mut map = self.map();
        let peer = map.entry(key).or_insert_with(|| Arc::new(Peer::new(key))).clone();
        peer.connections.fetch_add(1, Ordering::AcqRel);
        peer
    }

    /// One connection of `peer` fewer; the peer is forgotten with its last connection unless
    /// its penalty is still remembered.
    pub(crate) fn leave(&self, peer: &Peer, now_ms: u64) {
        let mut map = self.map();
        if peer.connections.fetch_sub(1, Ordering::AcqRel) == 1 && peer.forgiven(now_ms) {
            map.remove(&peer.key);
        }
    }

    /// Forgets peers without a connection whose offences are forgiven, and the
    /// longest-forgiven ones beyond [`MAX_REMEMBERED`].
    pub(crate) fn sweep(&self, now_ms: u64) {
        let mut map = self.map();
        map.retain(|_, p| p.connections() > 0 || !p.forgiven(now_ms));
        let remembered = map.values().filter(|p| p.connections() == 0).count();
        if remembered > MAX_REMEMBERED {
            let mut idle: Vec<(u64, PeerKey)> =
                map.values().filter(|p| p.connections() == 0).map(|p| (p.last_offence_ms(), p.key)).collect();
            idle.sort_unstable_by_key(|(last, _)| *last);
            for (_, key) in idle.into_iter().take(remembered - MAX_REMEMBERED) {
                map.remove(&key);
            }
        }
    }

    /// Peers known now (with a connection, or remembered).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn addresses_of_one_host_are_one_peer_and_other_hosts_are_not() {
        let v4 = PeerKey::of_ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)));
        assert_eq!(v4, PeerKey::of_ip(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 7).to_ipv6_mapped())));
        assert_ne!(v4, PeerKey::of_ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 8))));
        let a: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(PeerKey::of_ip(a.into()), PeerKey::of_ip(same_64.into()));
        assert_ne!(PeerKey::of_ip(a.into()), PeerKey::of_ip(other_64.into()));
        assert_ne!(PeerKey::of_certificate(b"cert a"), PeerKey::of_certificate(b"cert b"));
    }

    #[test]
    fn the_penalty_doubles_with_each_offence_up_to_its_bound_and_is_forgiven() {
        let peer = Peer::new(PeerKey::V4([127, 0, 0, 1]));
        let mut now = 1_000;
        let mut penalties = Vec::new();
        for _ in 0..10 {
            let penalty = peer.strike(now).expect("a new offence");
            assert_eq!(peer.penalty_left(now), Some(penalty));
            assert_eq!(peer.penalty_left(now + ms(penalty)), None);
            penalties.push(penalty.as_secs());
            now += ms(penalty) + ms(EPISODE);
        }
        assert_eq!(penalties, [1, 2, 4, 8, 16, 32, 64, 64, 64, 64]);
        // Offences within one episode count once.
        now += ms(EPISODE);
        assert!(peer.strike(now).is_some());
        assert_eq!(peer.strike(now + ms(EPISODE) - 1), None);
        // Forgiven after a quiet spell: back to the first penalty.
        now += ms(FORGIVE_AFTER);
        assert_eq!(peer.strike(now), Some(FIRST_PENALTY));
    }

    #[test]
    fn a_peer_is_forgotten_with_its_last_connection_unless_penalized_and_memory_is_bounded() {
        let peers = Peers::default();
        let key = PeerKey::V4([192, 0, 2, 1]);
        let p = peers.join(key);
        let q = peers.join(key);
        assert!(Arc::ptr_eq(&p, &q));
        assert_eq!(p.connections(), 2);
        peers.leave(&p, 0);
        peers.leave(&q, 0);
        assert_eq!(peers.len(), 0, "an innocent peer is forgotten with its last connection");
        // A penalized peer is remembered after its connections are gone ...
        let p = peers.join(key);
        p.strike(10);
        peers.leave(&p, 10);
        assert_eq!(peers.get(&key).and_then(|p| p.penalty_left(11)), Some(Duration::from_millis(999)));
        // ... until forgiven.
        peers.sweep(10 + ms(FORGIVE_AFTER));
        assert!(peers.get(&key).is_none());
        // However many peers offend, at most MAX_REMEMBERED are remembered without a
        // connection; the most recent offenders are kept.
        for i in 0..(MAX_REMEMBERED as u32 + 100) {
            let p = peers.join(PeerKey::V4(i.to_be_bytes()));
            p.strike(u64::from(i));
            peers.leave(&p, u64::from(i));
        }
        peers.sweep(MAX_REMEMBERED as u64 + 100);
        assert_eq!(peers.len(), MAX_REMEMBERED);
        assert!(peers.get(&PeerKey::V4(0u32.to_be_bytes())).is_none());
        assert!(peers.get(&PeerKey::V4((MAX_REMEMBERED as u32 + 99).to_be_bytes())).is_some());
    }

    #[test]
    fn a_penalized_peer_has_at_most_max_held_connections_held() {
        let peer = Arc::new(Peer::new(PeerKey::V4([198, 51, 100, 1])));
        let held: Vec<Held> = (0..MAX_HELD).map(|_| peer.hold().expect("within the bound")).collect();
        assert!(peer.hold().is_none(), "one more than MAX_HELD");
        drop(held);
        assert!(peer.hold().is_some(), "given back");
    }

    #[test]
    fn greedy_peers_leave_slots_for_a_newcomer() {
        // 256 slots, taken one at a time by whichever of `n` greedy peers may.
        for n in [1usize, 2, 4, 8, 16, 64, 255] {
            let total = 256;
            let peers: Vec<Peer> = (0..n).map(|i| Peer::new(PeerKey::V4((i as u32).to_be_bytes()))).collect();
            let mut held = 0;
            loop {
                let mut took = false;
                for p in &peers {
                    if held < total && p.take_slot(total - held) {
                        held += 1;
                        took = true;
                    }
                }
                if !took {
                    break;
                }
            }
            let newcomer = Peer::new(PeerKey::V4([203, 0, 113, 1]));
            assert!(newcomer.take_slot(total - held), "{n} greedy peers left no slot ({held} held)");
        }
    }
}
