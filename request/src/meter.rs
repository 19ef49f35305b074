//! The per-resource request metrics, the part both filter forms share
//! ([`switchyard_table::metrics`] names them): a request's series is found when its rule wins
//! ([`Winner`]), kept as a small [`SeriesId`] while the request lives, and counted when it ends
//! ([`Ended`]): its status class and its duration.
//!
//! A [`SeriesBook`] gives each series a VM (wasm) or a worker thread (module) has counted into
//! its id; it grows with the series seen, which the table's fold bounds (one per resource and
//! backend, up to the limit, and one `folded`).

use std::any::Any;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Weak;

use switchyard_table::metrics::{
    duration_bucket, status_class, Series, BUCKET_LABEL, DURATION, DURATION_BUCKETS, DURATION_LABELS, REQUESTS,
    REQUEST_LABELS, STATUS_CLASSES,
};

use crate::host::NO_RULE;

/// What a request's winner leaves for the access log and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Winner<'a> {
    /// The winning rule's name ([`NO_RULE`] when no rule took the request).
    pub rule: &'a str,
    /// Whose requests it is counted with.
    pub series: Series<'a>,
    /// The winning rule's place in its table (none when no rule took the request): what
    /// [`SeriesBook::winner_id`] finds a series by once it found it by name.
    pub place: Option<u32>,
}

impl Winner<'_> {
    /// The winner of a request no rule took.
    pub const NONE: Winner<'static> = Winner {
        rule: NO_RULE,
        series: Series::Unrouted,
        place: None,
    };

    /// The winning rule's resource (`Ingress/shop/api`; [`NO_RULE`] when none).
    pub fn resource(&self) -> &str {
        switchyard_table::metrics::resource_of(self.rule)
    }
}

/// A series in a [`SeriesBook`]: an index, which a request keeps until it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesId(pub u32);

/// The series book's hash: its keys are the table's resource names (the cluster's objects, never
/// a client's words), short, and looked up on every request, where SipHash's keyed rounds cost the
/// wasm filter more than the rest of the lookup. It takes eight bytes a step (a rotate, a xor and a
/// multiply, as rustc's FxHash does); FNV's step of one byte cost twice the lookup.
#[derive(Debug, Clone, Copy, Default)]
struct WordHash(u64);

impl WordHash {
    fn step(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHash {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut eight = [0; 8];
            eight.copy_from_slice(word);
            self.step(u64::from_le_bytes(eight));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut eight = [0; 8];
            eight[..rest.len()].copy_from_slice(rest);
            self.step(u64::from_le_bytes(eight) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.step(u64::from(byte));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A resource's series to one backend (`None`: the rule answers itself).
type BackendSeries = (Option<Box<str>>, SeriesId);

/// The series a VM or a worker counted into, by resource and backend.
#[derive(Debug)]
pub struct SeriesBook {
    /// By resource, each backend's series (a resource has a handful: a linear search).
    ids: HashMap<Box<str>, Vec<BackendSeries>, BuildHasherDefault<WordHash>>,
    /// Each series' `kind`, `namespace`, `resource` and `backend` labels, by id.
    labels: Vec<[Box<str>; 4]>,
    /// One table's rules' series by their place.
    places: Places,
}

/// The series of one table's rules by their place, for [`SeriesBook::winner_id`]: a rule that won
/// before finds its series by an integer rather than by its resource's name. Kept for one table at
/// a time (the last one asked of; another table starts it anew), which it holds weakly: while it
/// holds the table's allocation no other table can take its address.
#[derive(Debug)]
struct Places {
    table: Weak<dyn Any>,
    /// By place, up to the furthest place that won ([`MAX_PLACES`] at most).
    ids: Vec<Option<BackendSeries>>,
}

/// The places [`Places`] keeps a series for: 16 bytes each in wasm, 1 MiB at most; a rule further
/// down a table is found by its name.
const MAX_PLACES: usize = 65_536;

impl Default for Places {
    fn default() -> Self {
        Places {
            table: Weak::<()>::new(),
            ids: Vec::new(),
        }
    }
}

impl Default for SeriesBook {
    fn default() -> Self {
        let fixed = |series: Series<'_>| series.labels().map(Box::from);
        SeriesBook {
            ids: HashMap::default(),
            labels: vec![fixed(Series::Unrouted), fixed(Series::Folded)],
            places: Places::default(),
        }
    }
}

impl SeriesBook {
    /// The series of requests no rule took.
    pub const UNROUTED: SeriesId = SeriesId(0);
    /// The series of the resources beyond the limit.
    pub const FOLDED: SeriesId = SeriesId(1);

    /// The id of `series`, given it the first time.
    pub fn id(&mut self, series: Series<'_>) -> SeriesId {
        let (resource, backend) = match series {
            Series::Unrouted => return Self::UNROUTED,
            Series::Folded => return Self::FOLDED,
            Series::Resource { resource, backend } => (resource, backend),
        };
        if let Some(backends) = self.ids.get(resource) {
            if let Some((_, id)) = backends.iter().find(|(b, _)| b.as_deref() == backend) {
                return *id;
            }
        }
        let id = SeriesId(u32::try_from(self.labels.len()).unwrap_or(u32::MAX));
        self.labels.push(series.labels().map(Box::from));
        let backends = self.ids.entry(resource.into()).or_default();
        backends.push((backend.map(Box::from), id));
        id
    }

    /// The id of `winner`'s series, its rule's place in `table` remembered: [`Self::id`] the first
    /// time a place wins (or wins with another backend), an integer's lookup after that. A table
    /// that is gone (or never was: `Weak::new()`) names no places: the series is found by name.
    pub fn winner_id(&mut self, winner: Winner<'_>, table: &Weak<dyn Any>) -> SeriesId {
        let (Some(place), Series::Resource { backend, .. }) = (winner.place, winner.series) else {
            return self.id(winner.series);
        };
        if table.strong_count() == 0 {
            return self.id(winner.series);
        }
        if !self.places.table.ptr_eq(table) {
            self.places = Places {
                table: table.clone(),
                ids: Vec::new(),
            };
        }
        let place = place as usize;
        if let Some(Some((known, id))) = self.places.ids.get(place) {
            if known.as_deref() == backend {
                return *id;
            }
        }
        let id = self.id(winner.series);
        if place < MAX_PLACES {
            if self.places.ids.len() <= place {
                self.places.ids.resize(place + 1, None);
            }
            self.places.ids[place] = Some((backend.map(Box::from), id));
        }
        id
    }

    /// The labels of series `id` (`kind`, `namespace`, `resource`, `backend`); those of
    /// [`Self::UNROUTED`] for an id it never gave.
    pub fn labels(&self, id: SeriesId) -> [&str; 4] {
        let labels = self.labels.get(id.0 as usize).or(self.labels.first());
        labels.map_or([NO_RULE; 4], |l| [&*l[0], &*l[1], &*l[2], &*l[3]])
    }

    /// How many series it holds.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether it holds only the two fixed series.
    pub fn is_empty(&self) -> bool {
        self.labels.len() <= 2
    }
}

/// How a request ended, as its metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// The index of its response code's class in
    /// [`switchyard_table::metrics::STATUS_CLASSES`].
    pub status_class: usize,
    /// From its headers reaching the filter to its end, in milliseconds.
    pub duration_ms: u64,
}

impl Ended {
    /// A request answered `code` (none: `None`) `duration_ms` after its headers came.
    pub fn new(code: Option<u64>, duration_ms: u64) -> Ended {
        Ended {
            status_class: status_class(code.unwrap_or(0)),
            duration_ms,
        }
    }
}

/// What a VM counted of one series since it last handed its counts to the host: requests by
/// status class, and their durations as a Prometheus histogram's buckets, sum and count. The wasm
/// filter counts here on the request path and hands the sums over on a tick, one host call per
/// stat that moved rather than two per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests, by the index of their class in [`STATUS_CLASSES`].
    pub requests: [u64; STATUS_CLASSES.len()],
    /// Durations, by the first bucket of [`DURATION_BUCKETS`] that holds them (not cumulative).
    pub buckets: [u64; DURATION_BUCKETS.len()],
    /// The durations' sum, in milliseconds.
    pub sum_ms: u64,
}

impl Tally {
    /// Counts a request that ended as `ended`.
    pub fn add(&mut self, ended: Ended) {
        if let Some(requests) = self.requests.get_mut(ended.status_class) {
            *requests += 1;
        }
        if let Some(bucket) = self.buckets.get_mut(duration_bucket(ended.duration_ms)) {
            *bucket += 1;
        }
        self.sum_ms = self.sum_ms.saturating_add(ended.duration_ms);
    }

    /// How many requests it counted.
    pub fn count(&self) -> u64 {
        self.requests.iter().sum()
    }

    /// The buckets as Prometheus counts them: each the durations at or under its bound (the last,
    /// `+Inf`, every one).
    pub fn cumulative(&self) -> [u64; DURATION_BUCKETS.len()] {
        let mut total = 0;
        self.buckets.map(|n| {
            total += n;
            total
        })
    }
}

/// One of a series' stats, as a flush hands it to the proxy: both filter forms name and label
/// their stats by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// The requests of the class at this index of [`STATUS_CLASSES`] ([`REQUESTS`]).
    Requests(usize),
    /// The durations at or under the bound at this index of [`DURATION_BUCKETS`] (`_bucket`).
    Bucket(usize),
    /// The durations' sum, in milliseconds (`_sum`).
    Sum,
    /// How many durations (`_count`).
    Count,
}

impl Stat {
    /// The stat's metric name.
    pub fn name(self) -> String {
        match self {
            Stat::Requests(_) => REQUESTS.to_owned(),
            Stat::Bucket(_) => format!("{DURATION}_bucket"),
            Stat::Sum => format!("{DURATION}_sum"),
            Stat::Count => format!("{DURATION}_count"),
        }
    }

    /// Its labels' names.
    pub fn label_names(self) -> Vec<&'static str> {
        (self.labels([""; 4]).into_iter()).map(|(name, _)| name).collect()
    }

    /// Its labels' names and values, for a series labelled `labels` (`kind`, `namespace`,
    /// `resource`, `backend`).
    pub fn labels(self, labels: [&str; 4]) -> Vec<(&'static str, &str)> {
        match self {
            Stat::Requests(class) => {
                let mut pairs: Vec<(&str, &str)> = REQUEST_LABELS.into_iter().zip(labels).collect();
                pairs.push((
                    REQUEST_LABELS[4],
                    STATUS_CLASSES.get(class).copied().unwrap_or_default(),
                ));
                pairs
            }
            Stat::Bucket(bucket) => {
                let mut pairs: Vec<(&str, &str)> = DURATION_LABELS.into_iter().zip(labels).collect();
                let bound = DURATION_BUCKETS.get(bucket).map_or("", |(le, _)| *le);
                pairs.push((BUCKET_LABEL, bound));
                pairs
            }
            Stat::Sum | Stat::Count => DURATION_LABELS.into_iter().zip(labels).collect(),
        }
    }
}

impl Tally {
    /// What a flush hands over of it: each request class and duration bucket that moved, and the
    /// sum and the count always (a sum of zeros, for requests of under a millisecond, is still
    /// the histogram's `_sum`).
    pub fn moved(&self) -> impl Iterator<Item = (Stat, u64)> {
        let requests = (self.requests.into_iter().enumerate()).map(|(class, n)| (Stat::Requests(class), n));
        let buckets = (self.cumulative().into_iter().enumerate()).map(|(bucket, n)| (Stat::Bucket(bucket), n));
        (requests.chain(buckets))
            .filter(|(_, n)| *n > 0)
            .chain([(Stat::Sum, self.sum_ms), (Stat::Count, self.count())])
    }
}

/// What a VM (the wasm filter) or a worker (the module) counted per series since it last handed
/// its counts to Envoy: a [`Tally`] per series, and which series moved.
#[derive(Debug, Default)]
pub struct Tallies {
    /// By series id.
    tallies: Vec<Tally>,
    /// The series counted into since the last [`Tallies::drain`].
    touched: Vec<SeriesId>,
}

impl Tallies {
    /// Counts a request of `series` that ended as `ended`.
    pub fn count(&mut self, series: SeriesId, ended: Ended) {
        let index = series.0 as usize;
        if self.tallies.len() <= index {
            self.tallies.resize(index + 1, Tally::default());
        }
        if let Some(tally) = self.tallies.get_mut(index) {
            if tally.count() == 0 {
                self.touched.push(series);
            }
            tally.add(ended);
        }
    }

    /// Takes what was counted since the last call: each series that moved, with its tally.
    pub fn drain(&mut self) -> impl Iterator<Item = (SeriesId, Tally)> + '_ {
        let Tallies { tallies, touched } = self;
        (touched.drain(..))
            .filter_map(move |series| Some((series, std::mem::take(tallies.get_mut(series.0 as usize)?))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn a_flush_hands_over_the_classes_and_buckets_that_moved_and_always_the_sum_and_count() {
        let mut tally = Tally::default();
        tally.add(Ended::new(Some(204), 0));
        let moved: Vec<(Stat, u64)> = tally.moved().collect();
        let two = STATUS_CLASSES.iter().position(|c| *c == "2xx").unwrap();
        assert_eq!(moved.first(), Some(&(Stat::Requests(two), 1)), "{moved:?}");
        assert_eq!(
            moved
                .iter()
                .filter(|(stat, _)| matches!(stat, Stat::Requests(_)))
                .count(),
            1,
            "only the class that moved"
        );
        assert_eq!(
            moved
                .iter()
                .filter(|(stat, n)| matches!(stat, Stat::Bucket(_)) && *n == 1)
                .count(),
            DURATION_BUCKETS.len(),
            "0 ms is under every bound"
        );
        assert_eq!(&moved[moved.len() - 2..], [(Stat::Sum, 0), (Stat::Count, 1)]);
        assert_eq!(
            Stat::Bucket(0).labels(["Ingress", "shop", "api", "shop/api:80"]),
            [
                ("kind", "Ingress"),
                ("namespace", "shop"),
                ("resource", "api"),
                ("le", "0.5")
            ]
        );
        assert_eq!(Stat::Sum.name(), format!("{DURATION}_sum"));
    }

    #[test]
    fn a_series_keeps_its_id_and_each_backend_of_a_resource_has_its_own() {
        let mut book = SeriesBook::default();
        let api = |backend| Series::Resource {
            resource: "Ingress/shop/api",
            backend,
        };
        let (a, b, direct) = (
            book.id(api(Some("shop/a_80"))),
            book.id(api(Some("shop/b_80"))),
            book.id(api(None)),
        );
        assert_eq!(book.id(api(Some("shop/a_80"))), a);
        assert!(a != b && b != direct && a != direct);
        assert_eq!(book.labels(b), ["Ingress", "shop", "api", "shop/b_80"]);
        assert_eq!(book.labels(direct)[3], "direct");
        assert_eq!(book.id(Series::Folded), SeriesBook::FOLDED);
        assert_eq!(book.labels(SeriesBook::FOLDED), ["folded"; 4]);
        assert_eq!(book.id(Series::Unrouted), SeriesBook::UNROUTED);
        assert_eq!(book.labels(SeriesId(99)), [NO_RULE; 4]);
        assert_eq!(book.len(), 5);
    }

    #[test]
    fn a_winners_place_finds_the_series_its_name_found_in_that_table_only() {
        let mut book = SeriesBook::default();
        let (first, second): (Rc<dyn Any>, Rc<dyn Any>) = (Rc::new(1u8), Rc::new(2u8));
        let winner = |resource, backend, place| Winner {
            rule: "r",
            series: Series::Resource { resource, backend },
            place: Some(place),
        };
        let api = book.winner_id(winner("Ingress/shop/api", Some("shop/a_80"), 3), &Rc::downgrade(&first));
        assert_eq!(
            book.winner_id(winner("Ingress/shop/api", Some("shop/a_80"), 3), &Rc::downgrade(&first)),
            api
        );
        // The same place with another backend (a weighted rule) is that backend's series.
        let b = book.winner_id(winner("Ingress/shop/api", Some("shop/b_80"), 3), &Rc::downgrade(&first));
        assert_ne!(b, api);
        assert_eq!(
            book.id(Series::Resource {
                resource: "Ingress/shop/api",
                backend: Some("shop/b_80")
            }),
            b
        );
        // In another table, place 3 is another rule: found by its name, not by the first table's place.
        let web = book.winner_id(
            winner("Ingress/shop/web", Some("shop/web_80"), 3),
            &Rc::downgrade(&second),
        );
        assert!(web != api && web != b);
        assert_eq!(book.labels(web)[2], "web");
        // A rule beyond the fold, and no rule, are their fixed series whatever their place.
        let folded = Winner {
            series: Series::Folded,
            ..winner("Ingress/z/z", None, 9)
        };
        assert_eq!(book.winner_id(folded, &Rc::downgrade(&second)), SeriesBook::FOLDED);
        assert_eq!(
            book.winner_id(Winner::NONE, &Rc::downgrade(&second)),
            SeriesBook::UNROUTED
        );
        // Without a table (`Weak::new()` is the same for every caller) a place names nothing.
        let nowhere: Weak<dyn Any> = Weak::<()>::new();
        let shop = book.winner_id(winner("Ingress/shop/api", Some("shop/a_80"), 7), &nowhere);
        let other = book.winner_id(winner("Ingress/other/api", Some("other/a_80"), 7), &nowhere);
        assert_eq!((shop, book.labels(other)[1]), (api, "other"));
    }

    #[test]
    fn a_request_ends_in_its_status_class_or_0xx_without_a_response() {
        assert_eq!(
            Ended::new(Some(503), 7),
            Ended {
                status_class: 5,
                duration_ms: 7
            }
        );
        assert_eq!(Ended::new(None, 0).status_class, 0);
    }

    #[test]
    fn a_tally_counts_classes_and_cumulative_buckets_as_prometheus_reads_them() {
        let mut tally = Tally::default();
        for (code, ms) in [(Some(200), 0), (Some(200), 7), (Some(503), 7), (None, 4_000_000)] {
            tally.add(Ended::new(code, ms));
        }
        assert_eq!(tally.requests, [1, 0, 2, 0, 0, 1]);
        assert_eq!(tally.count(), 4);
        assert_eq!(tally.sum_ms, 4_000_014);
        let cumulative = tally.cumulative();
        let at = |le: &str| cumulative[DURATION_BUCKETS.iter().position(|(l, _)| *l == le).unwrap()];
        assert_eq!(
            (at("0.5"), at("5"), at("10"), at("3600000"), at("+Inf")),
            (1, 1, 3, 3, 4)
        );
    }

    #[test]
    fn the_winner_names_its_resource() {
        let winner = Winner {
            rule: "Ingress/shop/api#2",
            series: Series::Folded,
            place: None,
        };
        assert_eq!(winner.resource(), "Ingress/shop/api");
        assert_eq!(Winner::NONE.resource(), NO_RULE);
    }
}
