//! Accounts policy: how long a session lives, how sign-in failures slow a client down, and
//! how long a sign-up answer takes.
//!
//! - **Sessions** expire after [`AccountPolicy::session_idle_ms`] without a request (30
//!   minutes by default) and at the latest [`AccountPolicy::session_max_ms`] after sign-in
//!   (12 hours), whichever comes first; "sign out everywhere" ends every session of the
//!   player ([`crate::players::end_all_sessions`]).
//! - **Sign-in throttling is per client and per account.** Wrong sign-ins are counted per
//!   source address (an IPv6 client by its /64 prefix, which one subscriber usually holds).
//!   The first [`ThrottlePolicy::free_failures`] are free; after that each failure makes the
//!   client wait, doubling from [`ThrottlePolicy::base_delay_ms`] up to
//!   [`ThrottlePolicy::max_delay_ms`]. The count is forgotten after
//!   [`ThrottlePolicy::forget_ms`] without a failure after the last wait. Someone typing
//!   another player's name with wrong PINs slows down only themselves: the player signs in
//!   from their own address as usual. A successful sign-in does not reset the count (a guesser holding one account
//!   could otherwise reset it between guesses).
//! - **Per account** (the name typed), wrong sign-ins from all addresses together are
//!   counted as well: past [`ThrottlePolicy::account_free_failures`] every sign-in to the
//!   name waits the same back-off, except from an address that signed in to it with the
//!   right PIN before — the player lifts the lock from home, a guesser spread over many
//!   addresses gets one try per wait. Failures from [`ThrottlePolicy::alert_addresses`]
//!   addresses raise one alert ([`Failure::alert`]).
//! - **Behind a reverse proxy** every sign-in would come from the proxy's address, so one
//!   guesser would make every player wait. The proxies named with `--trusted-proxy` (CIDR
//!   networks, [`TrustedProxies`]) are believed: for a connection from one of them the client
//!   is the right-most `X-Forwarded-For` address that is not itself a trusted proxy. From any
//!   other peer the header is ignored, so a client cannot pick the address it is counted
//!   under. With no trusted proxy (the default) the header is never read.
//! - **Sign-up does not tell which names exist**: a taken name and a free one get the same
//!   answer ("accepted: sign in with this name and PIN"), no session cookie either way, after
//!   the same work (the PIN is hashed in both cases) and no earlier than
//!   [`AccountPolicy::sign_up_floor_ms`] after the request arrived. The page then signs in;
//!   a taken name fails there like any wrong PIN, counted by the throttle.
//!
//! All functions take the time as an argument (`now_ms`), so the tests drive the clock.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use ipnet::IpNet;

/// Session lifetimes and sign-up timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountPolicy {
    /// A session unused this long (ms) is ended.
    pub session_idle_ms: i64,
    /// A session is ended this long (ms) after sign-in, however busy.
    pub session_max_ms: i64,
    /// A sign-up answer is sent no earlier than this (ms) after the request arrived, whether
    /// the name was free or taken.
    pub sign_up_floor_ms: u64,
    /// The sign-in back-off.
    pub throttle: ThrottlePolicy,
}

impl Default for AccountPolicy {
    fn default() -> Self {
        AccountPolicy {
            session_idle_ms: 30 * 60 * 1000,
            session_max_ms: 12 * 60 * 60 * 1000,
            sign_up_floor_ms: 250,
            throttle: ThrottlePolicy::default(),
        }
    }
}

/// The per-client sign-in back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlePolicy {
    /// Wrong sign-ins a client may make before it has to wait.
    pub free_failures: u32,
    /// The wait after the first failure beyond the free ones (ms); doubles with each further.
    pub base_delay_ms: i64,
    /// The longest wait (ms).
    pub max_delay_ms: i64,
    /// A client's count is forgotten after this long (ms) without a failure, counted from the
    /// end of its last wait.
    pub forget_ms: i64,
    /// The most clients tracked at once; beyond it the one whose last failure is oldest is
    /// dropped (the map stays bounded whatever the number of addresses). Accounts likewise.
    pub max_clients: usize,
    /// Wrong sign-ins an account may take, from all addresses together, before every
    /// sign-in to it waits (the same doubling back-off) — except from an address that
    /// signed in to it with the right PIN before (the player's own).
    pub account_free_failures: u32,
    /// An account failed from this many different addresses within the forget period is
    /// being guessed across addresses: logged as an alert and counted in the metrics.
    pub alert_addresses: u32,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        ThrottlePolicy {
            free_failures: 5,
            base_delay_ms: 1_000,
            max_delay_ms: 15 * 60 * 1000,
            forget_ms: 15 * 60 * 1000,
            max_clients: 100_000,
            account_free_failures: 10,
            alert_addresses: 5,
        }
    }
}

/// Which client a sign-in came from: an IPv4 address, or an IPv6 address's /64 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(u128);

impl From<IpAddr> for ClientKey {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => ClientKey(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(u128::from(u32::from(v4))),
                // The top bit set keeps IPv6 prefixes apart from IPv4 addresses.
                None => ClientKey((u128::from(v6) & !((1u128 << 64) - 1)) | (1u128 << 127)),
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last_failure_ms: i64,
    blocked_until_ms: i64,
}

impl Entry {
    /// Since when the client has neither failed nor been waiting.
    fn quiet_since(&self) -> i64 {
        self.last_failure_ms.max(self.blocked_until_ms)
    }
}

/// Wrong sign-ins to one account (by the name typed, so that an unknown name is counted
/// like a real one): the addresses they came from (up to the alert threshold), and the
/// addresses that signed in to it with the right PIN (up to [`KNOWN_ADDRESSES`]).
#[derive(Debug, Clone, Default)]
struct AccountEntry {
    failures: u32,
    last_failure_ms: i64,
    blocked_until_ms: i64,
    from: Vec<ClientKey>,
    known: Vec<ClientKey>,
    alerted: bool,
    /// The last failure or sign-in (the quietest account is dropped first).
    seen_ms: i64,
}

/// How many addresses an account remembers as its player's own.
pub const KNOWN_ADDRESSES: usize = 8;

/// The doubling wait after `failures` wrong sign-ins of which `free` were free.
fn back_off(p: &ThrottlePolicy, failures: u32, free: u32) -> i64 {
    let beyond = failures.saturating_sub(free);
    if beyond == 0 {
        return 0;
    }
    let factor = 1i64.checked_shl(beyond.saturating_sub(1).min(40)).unwrap_or(i64::MAX);
    p.base_delay_ms.saturating_mul(factor).min(p.max_delay_ms)
}

/// What a wrong sign-in did to its client and its account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// How long the next sign-in from this client, or to this account from an address not
    /// its player's, must wait (ms; 0: none).
    pub wait_ms: i64,
    /// This failure made the account one guessed across addresses (logged once per spell).
    pub alert: bool,
}

/// The account's entry, made room for: the map holds at most `max` accounts, the one seen
/// least recently dropped first.
fn account_entry<'a>(
    accounts: &'a mut HashMap<String, AccountEntry>,
    account: &str,
    max: usize,
    now_ms: i64,
) -> &'a mut AccountEntry {
    if accounts.len() >= max.max(1)
        && !accounts.contains_key(account)
        && let Some(oldest) = accounts.iter().min_by_key(|(_, e)| e.seen_ms).map(|(k, _)| k.clone())
    {
        accounts.remove(&oldest);
    }
    let e = accounts.entry(account.to_owned()).or_default();
    e.seen_ms = now_ms;
    e
}

/// The reverse proxies whose `X-Forwarded-For` names the client (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Trusts connections from these networks.
    pub fn new(networks: Vec<IpNet>) -> Self {
        TrustedProxies(networks)
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client a request came from: `peer`, or, when `peer` is a trusted proxy, the
    /// right-most address of the `X-Forwarded-For` values (`forwarded_for`, in header order)
    /// that is not a trusted proxy. An entry that is not an address ends the walk at the hop
    /// that appended it (the last trusted one), so a client's own text cannot choose its key.
    pub fn client<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops: Vec<&str> = forwarded_for.into_iter().flat_map(|v| v.split(',')).map(str::trim).collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(ip) = parse_hop(hop) else { return client };
            client = ip;
            if !self.trusts(ip) {
                return ip;
            }
        }
        client
    }
}

/// An `X-Forwarded-For` entry: an address, an IPv4 address with a port, or a bracketed IPv6
/// address with or without a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| hop.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Wrong sign-ins per client, with the back-off of [`ThrottlePolicy`].
#[derive(Debug)]
pub struct SignInThrottle {
    policy: ThrottlePolicy,
    clients: Mutex<HashMap<ClientKey, Entry>>,
    accounts: Mutex<HashMap<String, AccountEntry>>,
    proxies: TrustedProxies,
}

impl SignInThrottle {
    /// An empty throttle that trusts no proxy.
    pub fn new(policy: ThrottlePolicy) -> Self {
        SignInThrottle {
            policy,
            clients: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
            proxies: TrustedProxies::default(),
        }
    }

    /// Believes `X-Forwarded-For` from these proxies (see [`TrustedProxies`]).
    pub fn trust_proxies(&mut self, proxies: TrustedProxies) {
        self.proxies = proxies;
    }

    /// The key a sign-in from `peer` with these `X-Forwarded-For` values is counted under.
    pub fn client_key<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> ClientKey {
        ClientKey::from(self.proxies.client(peer, forwarded_for))
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<ClientKey, Entry>> {
        match self.clients.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// `Some(ms)` when the client must wait that long before its next sign-in is tried.
    pub fn wait_ms(&self, client: ClientKey, now_ms: i64) -> Option<i64> {
        let clients = self.clients();
        let e = clients.get(&client)?;
        (e.blocked_until_ms > now_ms).then(|| e.blocked_until_ms - now_ms)
    }

    /// Records a wrong sign-in; returns how long the client now has to wait (0 while its
    /// failures are within the free ones).
    pub fn failed(&self, client: ClientKey, now_ms: i64) -> i64 {
        let p = self.policy;
        let mut clients = self.clients();
        if clients.len() >= p.max_clients && !clients.contains_key(&client) {
            clients.retain(|_, e| now_ms.saturating_sub(e.quiet_since()) < p.forget_ms);
            if clients.len() >= p.max_clients
                && let Some(oldest) = clients.iter().min_by_key(|(_, e)| e.quiet_since()).map(|(k, _)| *k)
            {
                clients.remove(&oldest);
            }
        }
        let e = clients.entry(client).or_insert(Entry { failures: 0, last_failure_ms: now_ms, blocked_until_ms: 0 });
        if now_ms.saturating_sub(e.quiet_since()) >= p.forget_ms {
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        e.last_failure_ms = now_ms;
        let delay = back_off(&p, e.failures, p.free_failures);
        if delay > 0 {
            e.blocked_until_ms = now_ms.saturating_add(delay);
        }
        delay
    }

    fn accounts(&self) -> std::sync::MutexGuard<'_, HashMap<String, AccountEntry>> {
        match self.accounts.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// `Some(ms)` when a sign-in to `account` from `client` must wait that long: the
    /// account's own wait, unless `client` signed in to it with the right PIN before.
    pub fn account_wait_ms(&self, account: &str, client: ClientKey, now_ms: i64) -> Option<i64> {
        let accounts = self.accounts();
        let e = accounts.get(account)?;
        (e.blocked_until_ms > now_ms && !e.known.contains(&client)).then(|| e.blocked_until_ms - now_ms)
    }

    /// Records a wrong sign-in to `account` from `client`: counted for the client
    /// ([`SignInThrottle::failed`]) and for the account.
    pub fn failed_sign_in(&self, account: &str, client: ClientKey, now_ms: i64) -> Failure {
        let client_wait = self.failed(client, now_ms);
        let p = self.policy;
        let mut accounts = self.accounts();
        let e = account_entry(&mut accounts, account, p.max_clients, now_ms);
        if now_ms.saturating_sub(e.last_failure_ms.max(e.blocked_until_ms)) >= p.forget_ms {
            e.failures = 0;
            e.from.clear();
            e.alerted = false;
        }
        e.failures = e.failures.saturating_add(1);
        e.last_failure_ms = now_ms;
        let threshold = usize::try_from(p.alert_addresses).unwrap_or(usize::MAX).max(1);
        if !e.from.contains(&client) && e.from.len() < threshold {
            e.from.push(client);
        }
        let alert = !e.alerted && e.from.len() >= threshold;
        e.alerted |= alert;
        let account_wait = back_off(&p, e.failures, p.account_free_failures);
        if account_wait > 0 {
            e.blocked_until_ms = now_ms.saturating_add(account_wait);
        }
        // The player's own address is not held back by the account's wait.
        let account_wait = if e.known.contains(&client) { 0 } else { account_wait };
        Failure { wait_ms: client_wait.max(account_wait), alert }
    }

    /// Records a sign-in to `account` with the right PIN from `client`: that address is
    /// the player's, and passes the account's wait from now on (the lock its player lifts).
    pub fn signed_in(&self, account: &str, client: ClientKey, now_ms: i64) {
        let mut accounts = self.accounts();
        let e = account_entry(&mut accounts, account, self.policy.max_clients, now_ms);
        if !e.known.contains(&client) {
            if e.known.len() >= KNOWN_ADDRESSES {
                e.known.remove(0);
            }
            e.known.push(client);
        }
    }

    /// Accounts now waiting because of wrong sign-ins, and those among them guessed across
    /// addresses (for the metrics).
    pub fn accounts_waiting(&self, now_ms: i64) -> (usize, usize) {
        let accounts = self.accounts();
        let waiting = accounts.values().filter(|e| e.blocked_until_ms > now_ms);
        let n = waiting.clone().count();
        (n, waiting.filter(|e| e.alerted).count())
    }

    /// Names currently tracked (for tests).
    pub fn tracked_accounts(&self) -> usize {
        self.accounts().len()
    }

    /// Clients currently tracked (for tests and metrics).
    pub fn tracked(&self) -> usize {
        self.clients().len()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy() {
        let none = TrustedProxies::default();
        let peer: IpAddr = "203.0.113.7".parse().unwrap();
        assert_eq!(none.client(peer, ["198.51.100.1"]), peer, "no proxy trusted: the header is not read");
        let proxies = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()]);
        assert_eq!(proxies.client(peer, ["198.51.100.1"]), peer, "a client cannot choose its key");
    }

    #[test]
    fn behind_trusted_proxies_the_client_is_the_rightmost_untrusted_hop() {
        let proxies = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let lb: IpAddr = "10.0.0.2".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // The client wrote a fake first entry; the proxies appended the real address and hops.
        assert_eq!(proxies.client(lb, ["6.6.6.6, 198.51.100.9, 10.1.2.3"]), ip("198.51.100.9"));
        // Several header lines count in order.
        assert_eq!(proxies.client(lb, ["6.6.6.6", "198.51.100.9"]), ip("198.51.100.9"));
        // Ports and brackets, and an IPv4-mapped peer.
        assert_eq!(proxies.client(lb, ["198.51.100.9:4711"]), ip("198.51.100.9"));
        assert_eq!(proxies.client(lb, ["[2001:db8::1]:443"]), ip("2001:db8::1"));
        assert_eq!(proxies.client(ip("::ffff:10.0.0.2"), ["198.51.100.9"]), ip("198.51.100.9"));
        // Garbage ends the walk at the hop that appended it; no header: the proxy itself.
        assert_eq!(proxies.client(lb, ["198.51.100.9, not-an-address, 10.1.2.3"]), ip("10.1.2.3"));
        assert_eq!(proxies.client(lb, std::iter::empty()), lb);
        assert_eq!(proxies.client(lb, ["10.9.9.9"]), ip("10.9.9.9"), "only proxies: the farthest one");
    }

    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn ip4(last: u8) -> ClientKey {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)).into()
    }

    #[test]
    fn five_wrong_sign_ins_are_free_then_the_client_waits_longer_each_time() {
        let t = SignInThrottle::new(ThrottlePolicy::default());
        let c = ip4(1);
        let now = 1_000_000;
        for k in 0..5 {
            assert_eq!(t.failed(c, now + k), 0, "failure {} is free", k + 1);
            assert_eq!(t.wait_ms(c, now + k), None);
        }
        assert_eq!(t.failed(c, now + 10), 1_000);
        assert_eq!(t.wait_ms(c, now + 10), Some(1_000));
        assert_eq!(t.wait_ms(c, now + 1_010), None, "the wait is over");
        assert_eq!(t.failed(c, now + 1_010), 2_000, "doubles");
        assert_eq!(t.failed(c, now + 3_010), 4_000);
    }

    #[test]
    fn the_wait_is_capped_and_forgotten_after_a_quiet_spell() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let c = ip4(2);
        let mut now = 0;
        let mut last = 0;
        for _ in 0..40 {
            last = t.failed(c, now);
            now += last;
        }
        assert_eq!(last, p.max_delay_ms, "never longer than the cap");
        // Quiet for the forget period after the wait ended: the next failure is free again.
        now += p.forget_ms;
        assert_eq!(t.wait_ms(c, now), None);
        assert_eq!(t.failed(c, now), 0);
    }

    #[test]
    fn an_outsider_guessing_a_name_slows_only_their_own_address() {
        let t = SignInThrottle::new(ThrottlePolicy::default());
        let attacker = ip4(66);
        let player = ip4(7);
        for k in 0..50 {
            t.failed(attacker, k);
        }
        assert!(t.wait_ms(attacker, 50).is_some());
        assert_eq!(t.wait_ms(player, 50), None, "the player's own address is not held back");
    }

    #[test]
    fn an_ipv6_client_is_one_client_across_its_64_prefix() {
        let a: ClientKey = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, 1)).into();
        let b: ClientKey = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0xffff, 1, 2, 3)).into();
        let other: ClientKey = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 3, 0, 0, 0, 1)).into();
        assert_eq!(a, b);
        assert_ne!(a, other);
        let mapped: ClientKey = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped()).into();
        assert_eq!(mapped, ip4(1), "an IPv4-mapped address is that IPv4 client");
    }

    #[test]
    fn wrong_pins_for_one_name_from_many_addresses_hold_the_name_back_but_not_its_player() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let home = ip4(200);
        t.signed_in("ann", home, 0);
        let mut alerts = 0;
        for k in 0..p.account_free_failures {
            let f = t.failed_sign_in("ann", ip4(u8::try_from(k + 1).unwrap()), i64::from(k));
            assert_eq!(f.wait_ms, 0, "failure {} of the name is free", k + 1);
            alerts += u32::from(f.alert);
        }
        let f = t.failed_sign_in("ann", ip4(99), 100);
        assert_eq!(f.wait_ms, p.base_delay_ms, "then the name waits, though this address is new");
        alerts += u32::from(f.alert);
        assert_eq!(alerts, 1, "one alert for the spell");
        assert_eq!(t.account_wait_ms("ann", ip4(150), 100), Some(p.base_delay_ms));
        assert_eq!(t.account_wait_ms("ann", home, 100), None, "the player's own address passes");
        assert_eq!(t.account_wait_ms("bob", ip4(150), 100), None, "other names are not held back");
        assert_eq!(t.account_wait_ms("ann", ip4(150), 100 + p.base_delay_ms), None, "the wait ends");
        assert_eq!(t.failed_sign_in("ann", ip4(98), 100 + p.base_delay_ms).wait_ms, 2 * p.base_delay_ms, "doubles");
        let later = 100 + 3 * p.base_delay_ms + p.forget_ms;
        let f = t.failed_sign_in("ann", ip4(151), later);
        assert_eq!((f.wait_ms, f.alert), (0, false), "forgotten after a quiet spell");
    }

    #[test]
    fn the_name_map_stays_bounded() {
        let t = SignInThrottle::new(ThrottlePolicy { max_clients: 100, ..ThrottlePolicy::default() });
        for k in 0..1_000u32 {
            t.failed_sign_in(&format!("n{k}"), ip4(1), i64::from(k));
        }
        assert!(t.tracked_accounts() <= 100, "{} names tracked", t.tracked_accounts());
    }

    #[test]
    fn the_client_map_stays_bounded() {
        let p = ThrottlePolicy { max_clients: 100, ..ThrottlePolicy::default() };
        let t = SignInThrottle::new(p);
        for k in 0..1_000u32 {
            t.failed(ClientKey::from(IpAddr::V4(Ipv4Addr::from(k))), i64::from(k));
        }
        assert!(t.tracked() <= 100, "{} clients tracked", t.tracked());
    }
}
