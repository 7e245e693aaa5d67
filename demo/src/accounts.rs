//! Accounts policy: how long a session lives, how wrong sign-ins slow the guesser (and never
//! lock out the player), and how long a sign-up answer takes.
//!
//! - **Sessions** expire after [`AccountPolicy::session_idle_ms`] without a request (30
//!   minutes by default) and at the latest [`AccountPolicy::session_max_ms`] after sign-in
//!   (12 hours), whichever comes first; "sign out everywhere" ends every session of the
//!   player ([`crate::players::end_all_sessions`]).
//! - **Wrong PINs slow the guesser, not the player.** A sign-in names an account (the name
//!   typed, so an unknown name is counted like a real one) and comes from a *client*: a
//!   **trusted device** of that account — a browser whose device cookie a sign-in to it with
//!   the right PIN registered ([`crate::players::trust_device`]) — or else its **address**
//!   (an IPv6 client by its /64 prefix). Each attempt is counted in the scopes ([`Scope`])
//!   that apply to it; past a scope's free failures every attempt in that scope waits,
//!   doubling from [`ThrottlePolicy::base_delay_ms`] up to [`ThrottlePolicy::max_delay_ms`]:
//!   - from an address: the *pair* (account, address), free
//!     [`ThrottlePolicy::pair_free_failures`]; the *address* (every name from it), free
//!     [`ThrottlePolicy::address_free_failures`]; and the *account* (every address that is not
//!     a trusted device, together), free [`ThrottlePolicy::account_free_failures`] — the
//!     account scope is what bounds a guesser spread over many addresses;
//!   - from a trusted device: only the *device* (account, device), free
//!     [`ThrottlePolicy::pair_free_failures`]: nobody else's wrong PINs ever hold it back;
//!   - with the account's right **recovery code** (shown at sign-up,
//!     [`crate::players::new_recovery_code`]): only the *recovery* scope (the account's
//!     attempts with its code), free [`ThrottlePolicy::pair_free_failures`]: the player on a
//!     new device passes every wait a guesser caused.
//!
//!   An attempt is admitted ([`SignInThrottle::admit`]) before its PIN is checked and
//!   settled after ([`Ticket::settle`]); while it is being checked it is *in flight*. A scope
//!   admits no more attempts in flight than it has free failures left, and past them one at a
//!   time, so attempts sent together as a wait ends get one try between them, not one each.
//!   A right PIN adds no failure anywhere and clears its pair's (device's, recovery's) count,
//!   but not the address's or the account's: a guesser holding an account of their own
//!   cannot reset their address by signing in to it. A count is forgotten after
//!   [`ThrottlePolicy::forget_ms`] without a failure after its last wait. Wrong PINs for one
//!   name (or attempts meeting its wait) from [`ThrottlePolicy::alert_addresses`] addresses
//!   raise one alert ([`Settled::alert`], [`Refused::alert`]).
//! - **Behind a reverse proxy** every sign-in would come from the proxy's address, so one
//!   guesser would make every player wait. The proxies named with `--trusted-proxy` (CIDR
//!   networks, [`TrustedProxies`]) are believed: for a connection from one of them the client
//!   is the right-most `X-Forwarded-For` address that is not itself a trusted proxy. From any
//!   other peer the header is ignored, so a client cannot pick the address it is counted
//!   under. With no trusted proxy (the default) the header is never read.
//! - **Sign-up does not tell which names exist**: a taken name and a free one get the same
//!   answer ("accepted: sign in with this name and PIN", and a recovery code that works only
//!   if the name was free), no session cookie either way, after the same work (the PIN is
//!   hashed in both cases) and no earlier than [`AccountPolicy::sign_up_floor_ms`] after the
//!   request arrived. The page then signs in; a taken name fails there like any wrong PIN,
//!   counted by the throttle.
//!
//! All functions take the time as an argument (`now_ms`), so the tests drive the clock.

use std::collections::HashMap;
use std::hash::Hash;
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

/// The sign-in back-off (see the module docs for the scopes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlePolicy {
    /// Wrong PINs free per pair (account, address), per trusted device of an account, and per
    /// account with its recovery code.
    pub pair_free_failures: u32,
    /// Wrong sign-ins free per address, whatever the names (many players may share one
    /// address behind a NAT).
    pub address_free_failures: u32,
    /// Wrong sign-ins free per account from all addresses together (trusted devices and
    /// recovery attempts apart); past them, sign-ins to it from new devices wait.
    pub account_free_failures: u32,
    /// The wait after the first failure beyond the free ones (ms); doubles with each further.
    pub base_delay_ms: i64,
    /// The longest wait (ms).
    pub max_delay_ms: i64,
    /// A count is forgotten after this long (ms) without a failure, counted from the end of
    /// its last wait.
    pub forget_ms: i64,
    /// The most pairs, addresses and accounts tracked at once (each); beyond it the
    /// quietest is dropped, so the maps stay bounded whatever the number of addresses.
    pub max_clients: usize,
    /// An account failed from this many different addresses within the forget period is
    /// being guessed across addresses: logged as an alert and counted in the metrics.
    pub alert_addresses: u32,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        ThrottlePolicy {
            pair_free_failures: 5,
            address_free_failures: 20,
            account_free_failures: 10,
            base_delay_ms: 1_000,
            max_delay_ms: 15 * 60 * 1000,
            forget_ms: 15 * 60 * 1000,
            max_clients: 100_000,
            alert_addresses: 5,
        }
    }
}

/// Which address a sign-in came from: an IPv4 address, or an IPv6 address's /64 prefix.
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

/// A trusted device as the throttle keys it: 16 bytes of its device token's SHA-256 (the
/// web layer derives it; the token itself never reaches this module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceKey(pub [u8; 16]);

/// Where a wrong sign-in is counted, and which wait refused an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One account from one address.
    Pair,
    /// One account from one of its trusted devices.
    Device,
    /// One account's attempts carrying its right recovery code.
    Recovery,
    /// Every name from one address.
    Address,
    /// One account from every address (trusted devices and recovery apart).
    Account,
}

impl Scope {
    /// The scope's name in answers (`scope`) and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Pair => "pair",
            Scope::Device => "device",
            Scope::Recovery => "recovery",
            Scope::Address => "address",
            Scope::Account => "account",
        }
    }
}

/// One sign-in attempt as the throttle sees it.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The name typed.
    pub account: &'a str,
    /// The address it came from ([`SignInThrottle::client_key`]).
    pub address: ClientKey,
    /// The browser's device, when the account trusts it.
    pub trusted_device: Option<DeviceKey>,
    /// The attempt carries the account's right recovery code.
    pub recovery: bool,
}

/// A wait in force: the attempt is refused before its PIN is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The scope whose wait is the longest.
    pub scope: Scope,
    /// How long (ms).
    pub wait_ms: i64,
}

/// A refused attempt: the wait, and whether this attempt made the account one guessed across
/// addresses (an address met the account's wait: it counts towards the alert like a wrong
/// PIN; once per spell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// The wait in force.
    pub wait: Refusal,
    /// Log and count the alert now.
    pub alert: bool,
}

/// Who an attempt is counted against within one account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PairClient {
    Address(ClientKey),
    Device(DeviceKey),
    Recovery,
}

impl PairClient {
    fn scope(self) -> Scope {
        match self {
            PairClient::Address(_) => Scope::Pair,
            PairClient::Device(_) => Scope::Device,
            PairClient::Recovery => Scope::Recovery,
        }
    }
}

/// An admitted attempt, in flight until it is settled with the outcome of its PIN check
/// ([`Ticket::settle`]). A ticket dropped unsettled (an error, a dropped request) counts as a
/// wrong PIN.
#[must_use = "settle the ticket with the outcome of the PIN check"]
#[derive(Debug)]
pub struct Ticket<'a> {
    throttle: &'a SignInThrottle,
    account: String,
    address: ClientKey,
    pair_client: PairClient,
    /// Counted in the address and account scopes too (an attempt from an address).
    wide: bool,
    admitted_ms: i64,
    settled: bool,
}

impl Ticket<'_> {
    /// Settles the attempt: a right PIN (`ok`) adds no failure and clears its pair's count; a
    /// wrong one is counted in every scope of the attempt.
    pub fn settle(mut self, ok: bool, now_ms: i64) -> Settled {
        self.settled = true;
        self.throttle.finish(&self, ok, now_ms)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let _ = self.throttle.finish(self, false, self.admitted_ms);
        }
    }
}

/// What a settled wrong sign-in did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// The longest wait this failure set for the next attempt of its kind (none while the
    /// failures are within the free ones).
    pub wait: Option<Refusal>,
    /// This failure made the account one guessed across addresses (once per spell).
    pub alert: bool,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    /// Attempts admitted and not yet settled.
    in_flight: u32,
    last_failure_ms: i64,
    blocked_until_ms: i64,
}

impl Entry {
    fn new(now_ms: i64) -> Self {
        Entry { failures: 0, in_flight: 0, last_failure_ms: now_ms, blocked_until_ms: 0 }
    }

    /// Since when the count has neither failed nor been waiting (an entry with attempts in
    /// flight is never quiet).
    fn quiet_since(&self) -> i64 {
        if self.in_flight > 0 { i64::MAX } else { self.last_failure_ms.max(self.blocked_until_ms) }
    }

    /// The wait an attempt in this scope meets: the back-off in force, or, when the free
    /// failures left are all in flight, the base delay (the attempts in flight decide).
    fn refusal(&self, p: &ThrottlePolicy, free: u32, now_ms: i64) -> Option<i64> {
        if self.blocked_until_ms > now_ms {
            return Some(self.blocked_until_ms - now_ms);
        }
        (self.in_flight > 0 && self.failures.saturating_add(self.in_flight) >= free).then_some(p.base_delay_ms)
    }

    /// An attempt is admitted (a count quiet for the forget period starts again); returns
    /// whether it started again.
    fn start(&mut self, p: &ThrottlePolicy, now_ms: i64) -> bool {
        let forgotten = self.in_flight == 0
            && self.failures > 0
            && now_ms.saturating_sub(self.last_failure_ms.max(self.blocked_until_ms)) >= p.forget_ms;
        if forgotten {
            self.failures = 0;
        }
        self.in_flight = self.in_flight.saturating_add(1);
        forgotten
    }

    /// An attempt failed: counted, and the back-off set; returns until when (0: none).
    fn fail(&mut self, p: &ThrottlePolicy, free: u32, now_ms: i64) -> i64 {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.failures = self.failures.saturating_add(1);
        self.last_failure_ms = now_ms;
        let wait = back_off(p, self.failures, free);
        if wait > 0 {
            self.blocked_until_ms = now_ms.saturating_add(wait);
            self.blocked_until_ms
        } else {
            0
        }
    }
}

/// An account's count, with the addresses its wrong PINs came from (up to the alert
/// threshold) and whether this spell has been alerted.
#[derive(Debug, Clone)]
struct AccountEntry {
    entry: Entry,
    from: Vec<ClientKey>,
    alerted: bool,
}

impl AccountEntry {
    /// Notes an address that failed (or met the wait); true when this makes the account one
    /// guessed across [`ThrottlePolicy::alert_addresses`] addresses, once per spell.
    fn note_address(&mut self, address: ClientKey, p: &ThrottlePolicy) -> bool {
        let threshold = usize::try_from(p.alert_addresses).unwrap_or(usize::MAX).max(1);
        if !self.from.contains(&address) && self.from.len() < threshold {
            self.from.push(address);
        }
        let alert = !self.alerted && self.from.len() >= threshold;
        self.alerted |= alert;
        alert
    }
}

/// The doubling wait after `failures` wrong sign-ins of which `free` were free.
fn back_off(p: &ThrottlePolicy, failures: u32, free: u32) -> i64 {
    let beyond = failures.saturating_sub(free);
    if beyond == 0 {
        return 0;
    }
    let factor = 1i64.checked_shl(beyond.saturating_sub(1).min(40)).unwrap_or(i64::MAX);
    p.base_delay_ms.saturating_mul(factor).min(p.max_delay_ms)
}

/// The entry for `key`, made room for: the map holds at most `max` entries; at the limit
/// the forgotten ones go, then the quietest.
fn bounded<'a, K: Eq + Hash + Clone, V>(
    map: &'a mut HashMap<K, V>,
    key: K,
    p: &ThrottlePolicy,
    now_ms: i64,
    quiet: impl Fn(&V) -> i64,
    new: impl FnOnce() -> V,
) -> &'a mut V {
    let max = p.max_clients.max(1);
    if map.len() >= max && !map.contains_key(&key) {
        map.retain(|_, v| now_ms.saturating_sub(quiet(v)) < p.forget_ms);
        if map.len() >= max
            && let Some(oldest) = map.iter().min_by_key(|(_, v)| quiet(v)).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
    map.entry(key).or_insert_with(new)
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

#[derive(Debug, Default)]
struct Counts {
    pairs: HashMap<(String, PairClient), Entry>,
    addresses: HashMap<ClientKey, Entry>,
    accounts: HashMap<String, AccountEntry>,
}

/// Wrong sign-ins per pair, device, recovery, address and account, with the back-off of
/// [`ThrottlePolicy`] (see the module docs). In memory, per process.
#[derive(Debug)]
pub struct SignInThrottle {
    policy: ThrottlePolicy,
    counts: Mutex<Counts>,
    proxies: TrustedProxies,
}

impl SignInThrottle {
    /// An empty throttle that trusts no proxy.
    pub fn new(policy: ThrottlePolicy) -> Self {
        SignInThrottle { policy, counts: Mutex::new(Counts::default()), proxies: TrustedProxies::default() }
    }

    /// Believes `X-Forwarded-For` from these proxies (see [`TrustedProxies`]).
    pub fn trust_proxies(&mut self, proxies: TrustedProxies) {
        self.proxies = proxies;
    }

    /// The address a sign-in from `peer` with these `X-Forwarded-For` values is counted under.
    pub fn client_key<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> ClientKey {
        ClientKey::from(self.proxies.client(peer, forwarded_for))
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        match self.counts.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Admits an attempt, in flight until its ticket is settled ([`Ticket::settle`]), or
    /// refuses it with the longest wait in force among its scopes.
    pub fn admit(&self, a: &Attempt<'_>, now_ms: i64) -> Result<Ticket<'_>, Refused> {
        let p = self.policy;
        let pair_client = match (a.trusted_device, a.recovery) {
            (Some(device), _) => PairClient::Device(device),
            (None, true) => PairClient::Recovery,
            (None, false) => PairClient::Address(a.address),
        };
        let wide = matches!(pair_client, PairClient::Address(_));
        let pair_key = (a.account.to_owned(), pair_client);
        let mut c = self.counts();
        let mut refusal: Option<Refusal> = None;
        let mut consider = |scope: Scope, wait: Option<i64>| {
            if let Some(wait_ms) = wait
                && refusal.is_none_or(|r| wait_ms > r.wait_ms)
            {
                refusal = Some(Refusal { scope, wait_ms });
            }
        };
        if wide {
            consider(
                Scope::Account,
                c.accounts.get(a.account).and_then(|e| e.entry.refusal(&p, p.account_free_failures, now_ms)),
            );
            consider(
                Scope::Address,
                c.addresses.get(&a.address).and_then(|e| e.refusal(&p, p.address_free_failures, now_ms)),
            );
        }
        consider(pair_client.scope(), c.pairs.get(&pair_key).and_then(|e| e.refusal(&p, p.pair_free_failures, now_ms)));
        if let Some(wait) = refusal {
            let alert = wide && c.accounts.get_mut(a.account).is_some_and(|e| e.note_address(a.address, &p));
            return Err(Refused { wait, alert });
        }
        let quiet = |e: &Entry| e.quiet_since();
        bounded(&mut c.pairs, pair_key, &p, now_ms, quiet, || Entry::new(now_ms)).start(&p, now_ms);
        if wide {
            bounded(&mut c.addresses, a.address, &p, now_ms, quiet, || Entry::new(now_ms)).start(&p, now_ms);
            let account = bounded(
                &mut c.accounts,
                a.account.to_owned(),
                &p,
                now_ms,
                |e: &AccountEntry| e.entry.quiet_since(),
                || AccountEntry { entry: Entry::new(now_ms), from: Vec::new(), alerted: false },
            );
            if account.entry.start(&p, now_ms) {
                account.from.clear();
                account.alerted = false;
            }
        }
        Ok(Ticket {
            throttle: self,
            account: a.account.to_owned(),
            address: a.address,
            pair_client,
            wide,
            admitted_ms: now_ms,
            settled: false,
        })
    }

    fn finish(&self, t: &Ticket<'_>, ok: bool, now_ms: i64) -> Settled {
        let p = self.policy;
        let mut c = self.counts();
        let quiet = |e: &Entry| e.quiet_since();
        let pair_key = (t.account.clone(), t.pair_client);
        if ok {
            if let Some(e) = c.pairs.get_mut(&pair_key) {
                e.in_flight = e.in_flight.saturating_sub(1);
                e.failures = 0;
                e.blocked_until_ms = 0;
                if e.in_flight == 0 {
                    c.pairs.remove(&pair_key);
                }
            }
            if t.wide {
                if let Some(e) = c.addresses.get_mut(&t.address) {
                    e.in_flight = e.in_flight.saturating_sub(1);
                }
                if let Some(e) = c.accounts.get_mut(&t.account) {
                    e.entry.in_flight = e.entry.in_flight.saturating_sub(1);
                }
            }
            return Settled { wait: None, alert: false };
        }
        let mut waits = vec![(
            t.pair_client.scope(),
            bounded(&mut c.pairs, pair_key, &p, now_ms, quiet, || Entry::new(now_ms)).fail(
                &p,
                p.pair_free_failures,
                now_ms,
            ),
        )];
        let mut alert = false;
        if t.wide {
            let until = bounded(&mut c.addresses, t.address, &p, now_ms, quiet, || Entry::new(now_ms)).fail(
                &p,
                p.address_free_failures,
                now_ms,
            );
            waits.push((Scope::Address, until));
            let account = bounded(
                &mut c.accounts,
                t.account.clone(),
                &p,
                now_ms,
                |e: &AccountEntry| e.entry.quiet_since(),
                || AccountEntry { entry: Entry::new(now_ms), from: Vec::new(), alerted: false },
            );
            waits.push((Scope::Account, account.entry.fail(&p, p.account_free_failures, now_ms)));
            alert = account.note_address(t.address, &p);
        }
        let wait = waits
            .into_iter()
            .filter(|&(_, until)| until > now_ms)
            .max_by_key(|&(_, until)| until)
            .map(|(scope, until)| Refusal { scope, wait_ms: until - now_ms });
        Settled { wait, alert }
    }

    /// Accounts now making new devices wait, and those among them guessed across addresses
    /// (for the metrics).
    pub fn accounts_waiting(&self, now_ms: i64) -> (usize, usize) {
        let c = self.counts();
        let waiting = c.accounts.values().filter(|e| e.entry.blocked_until_ms > now_ms);
        let n = waiting.clone().count();
        (n, waiting.filter(|e| e.alerted).count())
    }

    /// Names tracked (for tests).
    pub fn tracked_accounts(&self) -> usize {
        self.counts().accounts.len()
    }

    /// Addresses tracked (for tests).
    pub fn tracked(&self) -> usize {
        self.counts().addresses.len()
    }

    /// Pairs (account and address, device or recovery) tracked (for tests).
    pub fn tracked_pairs(&self) -> usize {
        self.counts().pairs.len()
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

    fn ip4(n: u32) -> ClientKey {
        IpAddr::V4(Ipv4Addr::from(0xC000_0200u32.wrapping_add(n))).into()
    }

    fn from(account: &str, address: ClientKey) -> Attempt<'_> {
        Attempt { account, address, trusted_device: None, recovery: false }
    }

    /// What one attempt met: a wait, a wrong PIN (and the wait it set), or a sign-in.
    #[derive(Debug, PartialEq)]
    enum Met {
        Refused(Refusal),
        Wrong(Settled),
        In,
    }

    fn attempt(t: &SignInThrottle, a: &Attempt<'_>, right_pin: bool, now: i64) -> Met {
        match t.admit(a, now) {
            Err(r) => Met::Refused(r.wait),
            Ok(ticket) if right_pin => {
                assert_eq!(ticket.settle(true, now).wait, None);
                Met::In
            }
            Ok(ticket) => Met::Wrong(ticket.settle(false, now)),
        }
    }

    fn wait_of(m: &Met) -> Option<(Scope, i64)> {
        match m {
            Met::Refused(r) => Some((r.scope, r.wait_ms)),
            Met::Wrong(s) => s.wait.map(|r| (r.scope, r.wait_ms)),
            Met::In => None,
        }
    }

    #[test]
    fn five_wrong_pins_from_one_address_are_free_then_that_pair_waits_longer_each_time() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let (home, other) = (ip4(1), ip4(2));
        for k in 0..5 {
            assert_eq!(wait_of(&attempt(&t, &from("ann", home), false, k)), None, "failure {} is free", k + 1);
        }
        assert_eq!(wait_of(&attempt(&t, &from("ann", home), false, 10)), Some((Scope::Pair, 1_000)));
        assert_eq!(wait_of(&attempt(&t, &from("ann", home), true, 20)), Some((Scope::Pair, 990)), "even the right PIN");
        assert_eq!(
            attempt(&t, &from("ann", other), false, 20),
            Met::Wrong(Settled { wait: None, alert: false }),
            "another address is not held back"
        );
        assert_eq!(
            attempt(&t, &from("bob", home), true, 20),
            Met::In,
            "another name from the same address is not held back"
        );
        assert_eq!(wait_of(&attempt(&t, &from("ann", home), false, 1_010)), Some((Scope::Pair, 2_000)), "doubles");
        assert_eq!(wait_of(&attempt(&t, &from("ann", home), false, 3_010)), Some((Scope::Pair, 4_000)));
        assert_eq!(attempt(&t, &from("ann", home), true, 7_010), Met::In, "the right PIN once the wait is over");
        assert_eq!(wait_of(&attempt(&t, &from("ann", home), false, 7_020)), None, "and it cleared the pair's count");
    }

    #[test]
    fn the_wait_is_capped_and_forgotten_after_a_quiet_spell() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let mut now = 0;
        let mut last = 0;
        for k in 0..40 {
            // A new name each time from one address: the address scope alone.
            let name = format!("n{k}");
            last = wait_of(&attempt(&t, &from(&name, ip4(3)), false, now)).map_or(0, |(_, w)| w);
            now += last;
        }
        assert_eq!(last, p.max_delay_ms, "never longer than the cap");
        now += p.forget_ms;
        assert_eq!(wait_of(&attempt(&t, &from("n99", ip4(3)), false, now)), None, "forgotten after a quiet spell");
    }

    #[test]
    fn one_address_trying_many_names_waits_after_twenty_wrong_pins() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        for k in 0..p.address_free_failures {
            let name = format!("n{k}");
            assert_eq!(wait_of(&attempt(&t, &from(&name, ip4(4)), false, i64::from(k))), None);
        }
        assert_eq!(wait_of(&attempt(&t, &from("last", ip4(4)), false, 100)), Some((Scope::Address, 1_000)));
        assert_eq!(wait_of(&attempt(&t, &from("fresh", ip4(4)), true, 200)), Some((Scope::Address, 900)));
        assert_eq!(attempt(&t, &from("fresh", ip4(5)), true, 200), Met::In, "other addresses are not held back");
    }

    #[test]
    fn wrong_pins_from_many_addresses_pause_new_devices_but_never_a_trusted_device() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let phone = Attempt { trusted_device: Some(DeviceKey([7; 16])), ..from("ann", ip4(200)) };
        let mut alerts = 0;
        for k in 0..p.account_free_failures {
            let m = attempt(&t, &from("ann", ip4(k + 10)), false, i64::from(k));
            assert_eq!(wait_of(&m), None, "failure {} of the name is free", k + 1);
            if let Met::Wrong(s) = m {
                alerts += u32::from(s.alert);
            }
        }
        let m = attempt(&t, &from("ann", ip4(99)), false, 100);
        assert_eq!(wait_of(&m), Some((Scope::Account, p.base_delay_ms)), "then new devices wait");
        assert_eq!(alerts, 1, "one alert for the spell, at the fifth address");
        assert_eq!(
            wait_of(&attempt(&t, &from("ann", ip4(150)), true, 150)),
            Some((Scope::Account, 950)),
            "the player on a new device too"
        );
        assert_eq!(attempt(&t, &phone, true, 150), Met::In, "the player's trusted device signs in at once");
        assert_eq!(attempt(&t, &Attempt { address: ip4(151), ..phone }, true, 150), Met::In, "from any address");
        assert_eq!(t.accounts_waiting(150), (1, 1));
        // The device's own wrong PINs count for the device alone.
        for k in 0..p.pair_free_failures {
            assert_eq!(wait_of(&attempt(&t, &phone, false, 160 + i64::from(k))), None);
        }
        assert_eq!(wait_of(&attempt(&t, &phone, false, 170)), Some((Scope::Device, p.base_delay_ms)));
        assert_eq!(attempt(&t, &from("bob", ip4(150)), true, 170), Met::In, "other names are not held back");
    }

    #[test]
    fn the_recovery_code_passes_every_wait_a_guesser_at_the_same_address_caused() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let hotel = ip4(42);
        // The guesser, on the player's hotel network, tries as fast as the waits allow.
        let mut now = 0;
        for _ in 0..40 {
            match attempt(&t, &from("ann", hotel), false, now) {
                Met::Refused(r) => now += r.wait_ms,
                m => now += wait_of(&m).map_or(1, |(_, w)| w.min(1)),
            }
        }
        let new_phone = from("ann", hotel);
        let refused = attempt(&t, &new_phone, true, now);
        assert!(matches!(refused, Met::Refused(_)), "{refused:?}");
        let with_code = Attempt { recovery: true, ..new_phone };
        assert_eq!(
            attempt(&t, &with_code, true, now),
            Met::In,
            "the recovery code passes the pair's, the address's and the name's waits"
        );
    }

    #[test]
    fn wrong_pins_with_the_right_recovery_code_wait_in_their_own_scope() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let code = Attempt { recovery: true, ..from("ann", ip4(1)) };
        for k in 0..p.pair_free_failures {
            assert_eq!(wait_of(&attempt(&t, &Attempt { address: ip4(k), ..code }, false, i64::from(k))), None);
        }
        assert_eq!(
            wait_of(&attempt(&t, &Attempt { address: ip4(77), ..code }, false, 10)),
            Some((Scope::Recovery, p.base_delay_ms))
        );
        assert_eq!(
            wait_of(&attempt(&t, &Attempt { address: ip4(78), ..code }, true, 20)),
            Some((Scope::Recovery, 990)),
            "from any address"
        );
        assert_eq!(
            attempt(&t, &from("ann", ip4(78)), true, 20),
            Met::In,
            "an attempt without the code is counted apart"
        );
    }

    #[test]
    fn attempts_sent_together_as_a_wait_ends_get_one_try_between_them() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        for k in 0..=p.account_free_failures {
            let _ = attempt(&t, &from("ann", ip4(k)), false, 0);
        }
        let end = p.base_delay_ms;
        // 100 attempts from 100 new addresses, all admitted or refused before any PIN check ends.
        let admitted: Vec<Ticket<'_>> = (100..200).filter_map(|k| t.admit(&from("ann", ip4(k)), end).ok()).collect();
        assert_eq!(admitted.len(), 1, "one try, not one each");
        for ticket in admitted {
            assert_eq!(ticket.settle(false, end).wait.map(|r| r.scope), Some(Scope::Account));
        }
    }

    #[test]
    fn sign_ins_at_the_same_moment_from_one_address_leave_nothing_behind_when_right() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let names: Vec<String> = (0..40).map(|k| format!("p{k}")).collect();
        for round in 0..3 {
            // As many at once as the address has free failures: all checked.
            let tickets: Vec<Ticket<'_>> =
                names[..20].iter().map(|n| t.admit(&from(n, ip4(8)), round).expect("admitted")).collect();
            let over = t.admit(&from(&names[20], ip4(8)), round).unwrap_err();
            assert_eq!(
                over.wait,
                Refusal { scope: Scope::Address, wait_ms: p.base_delay_ms },
                "the 21st waits for them"
            );
            for ticket in tickets {
                assert_eq!(ticket.settle(true, round).wait, None);
            }
        }
        assert_eq!(attempt(&t, &from("late", ip4(8)), true, 10), Met::In, "right PINs left no count");
    }

    #[test]
    fn a_ticket_dropped_unsettled_counts_as_a_wrong_pin() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        for k in 0..=p.pair_free_failures {
            drop(t.admit(&from("ann", ip4(1)), k.into()).expect("admitted"));
        }
        assert_eq!(wait_of(&attempt(&t, &from("ann", ip4(1)), true, 10)).map(|(s, _)| s), Some(Scope::Pair));
    }

    #[test]
    fn a_right_pin_adds_no_failure_and_resets_nothing_for_a_guesser() {
        let p = ThrottlePolicy::default();
        let t = SignInThrottle::new(p);
        let a = ip4(9);
        for k in 0..50 {
            assert_eq!(attempt(&t, &from("mine", a), true, k), Met::In, "right PINs never make an address wait");
        }
        for k in 0..p.address_free_failures - 1 {
            let name = format!("n{k}");
            let _ = attempt(&t, &from(&name, a), false, 100);
        }
        assert_eq!(attempt(&t, &from("mine", a), true, 100), Met::In, "the guesser signs in to their own account");
        let _ = attempt(&t, &from("x", a), false, 100);
        assert_eq!(
            wait_of(&attempt(&t, &from("y", a), false, 100)),
            Some((Scope::Address, p.base_delay_ms)),
            "the count was not reset"
        );
    }

    /// An outsider cycling N addresses (N = 1 … 1 000), 10 wrong PINs a second for six hours
    /// of the injected clock, against one name. Every simulated minute the player signs in
    /// from a trusted device (at a new address each time) and from a new device with the
    /// recovery code: each is let in at once, every time. A new device without the code
    /// waits (the name's wait, whose answer offers the recovery code). The guesses that get
    /// a PIN checked are bounded by the name's back-off whatever N.
    #[test]
    fn an_outsider_cycling_addresses_never_keeps_the_player_out() {
        let p = ThrottlePolicy::default();
        let secs = 6 * 3_600;
        for n in [1u32, 10, 100, 1_000] {
            let t = SignInThrottle::new(p);
            let (mut guesses, mut refused, mut player_in, mut new_device_refused) = (0u32, 0u32, 0u32, 0u32);
            let mut next = 0u32;
            for s in 0..secs {
                let now = i64::from(s) * 1_000;
                for k in 0..10 {
                    let addr = ip4(1_000 + next % n);
                    next = next.wrapping_add(1);
                    match attempt(&t, &from("ann", addr), false, now + k * 100) {
                        Met::Refused(_) => refused += 1,
                        _ => guesses += 1,
                    }
                }
                if s % 60 == 59 {
                    let somewhere = ip4(100_000 + s);
                    let phone = Attempt { trusted_device: Some(DeviceKey([1; 16])), ..from("ann", somewhere) };
                    assert_eq!(attempt(&t, &phone, true, now + 999), Met::In, "N = {n}, {s} s: the trusted device");
                    let code = Attempt { recovery: true, ..from("ann", somewhere) };
                    assert_eq!(
                        attempt(&t, &code, true, now + 999),
                        Met::In,
                        "N = {n}, {s} s: a new device with the code"
                    );
                    player_in += 2;
                    if let Met::Refused(r) = attempt(&t, &from("ann", ip4(200_000 + s)), true, now + 999) {
                        assert_eq!(r.scope, Scope::Account, "a new device waits for the name, and is told so");
                        new_device_refused += 1;
                    }
                }
            }
            // 10 free, then the doubling waits up to the cap (about 10 guesses in the first
            // 17 minutes), then one per 15 minutes.
            let bound =
                p.account_free_failures + 10 + u32::try_from(i64::from(secs) * 1_000 / p.max_delay_ms).unwrap() + 1;
            eprintln!(
                "N = {n:>5} addresses: {guesses} PINs checked, {refused} attempts refused in {secs} s; player signed in {player_in}/{player_in}; a new device without the code refused {new_device_refused} times"
            );
            assert!(guesses <= bound, "N = {n}: {guesses} guesses > {bound}");
            assert!(new_device_refused > 0, "the name did wait");
        }
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
    fn the_maps_stay_bounded() {
        let t = SignInThrottle::new(ThrottlePolicy { max_clients: 100, ..ThrottlePolicy::default() });
        for k in 0..1_000u32 {
            let name = format!("n{k}");
            let _ = attempt(&t, &from(&name, ip4(k)), false, i64::from(k));
        }
        assert!(t.tracked_accounts() <= 100, "{} names tracked", t.tracked_accounts());
        assert!(t.tracked() <= 100, "{} addresses tracked", t.tracked());
        assert!(t.tracked_pairs() <= 100, "{} pairs tracked", t.tracked_pairs());
    }
}
