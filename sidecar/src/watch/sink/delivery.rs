//! What every sink shares, written once: the sinks of a watch and what each holds.
//!
//! - **Change detection.** Each sink remembers the [`Output`] it answered last (took, or refused as
//!   too large); a round pushes a sink only when its [`Part`] of the newest output differs (the
//!   table by its content hash, the L4 routes by value). The table is encoded once per round, and
//!   only when a sink is to be given it.
//! - **Retry.** A sink whose push failed holds nothing: the next round (the engine retries every
//!   [`crate::watch::rebuild::RETRY_AFTER`]) pushes it the newest output; the others are not pushed
//!   again.
//! - **Said once.** A failing sink is logged when it starts failing and when it works again
//!   ([`crate::watch::state::Failures`]), whatever the retries between; `/readyz` and `/status` say
//!   meanwhile which sinks fail and why.
//! - **Leading.** The sinks that write to the cluster are written only while this replica leads
//!   ([`Leader`]); while following they hold nothing, so on taking over they get the newest output.
//!
//! What differs stays per sink: a sink refusing a table as too large ([`PushError::TooLarge`])
//! counts as having answered it (not retried until the table changes) and keeps the output it took
//! last, which a repair applies again; the L4 sinks log what they carry.

use std::sync::Arc;

use switchyard_table::TableSpec;
use tracing::{error, info};

use crate::flags::{TableEncoder, TableEncoding};
use crate::watch::lead::leader::Leader;
use crate::watch::sink::drift::Followed;
use crate::watch::sink::error::PushError;
use crate::watch::sink::{Encoded, Output, Part, Sink};
use crate::watch::state::{Shared, SinkOutcome, SinkPush};

/// Why a round pushes: what a sink's log line says when it takes the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occasion {
    /// A new compilation, or a retry.
    Change,
    /// This replica just became the leader.
    TakeOver,
    /// A sink's object was deleted or changed by someone else.
    Repair,
}

/// What one round did with the table, for the engine's count of pushed tables and its push log.
#[derive(Debug, Default)]
pub struct Round {
    /// Every table sink this replica writes answered the round's table (took or refused it).
    pub table_answered: bool,
    /// Some table sink was failing before the round (a retry was due).
    pub was_failing: bool,
    /// The table could not be encoded (an internal error, never expected): no table sink was pushed.
    pub not_encoded: Option<String>,
    /// The outcome of each table sink this replica writes, in order.
    pub outcomes: Vec<SinkPush>,
}

/// What a sink answered last.
#[derive(Debug, Clone)]
struct Held {
    output: Arc<Output>,
    outcome: SinkOutcome,
}

/// One sink and what it holds.
struct Slot {
    sink: Sink,
    name: String,
    /// What it answered last; `None` before its first push, after a failure, and while a
    /// follower may not write it.
    held: Option<Held>,
    /// The output it took last (what it still holds while it refuses newer tables).
    taken: Option<Arc<Output>>,
    /// `{name}: {why}` of its last push, while it fails (a retry is due).
    failing: Option<String>,
}

/// The sinks of a watch.
pub struct Sinks {
    slots: Vec<Slot>,
    /// How the ECDS file and the Istio objects carry the table (`--table-encoding`): one encoder for
    /// every sink, which reuses what did not change since the table it encoded last.
    encoder: TableEncoder,
}

impl Sinks {
    /// The sinks, in the order they are pushed.
    pub fn new(sinks: Vec<Sink>) -> Sinks {
        let slots = sinks
            .into_iter()
            .map(|sink| Slot {
                name: sink.name(),
                sink,
                held: None,
                taken: None,
                failing: None,
            })
            .collect();
        Sinks {
            slots,
            encoder: TableEncoding::default().encoder(),
        }
    }

    /// The same sinks, giving the table in `encoding`.
    pub fn with_encoding(mut self, encoding: TableEncoding) -> Sinks {
        self.encoder = encoding.encoder();
        self
    }

    /// The names of the sinks carrying `part`.
    pub fn names(&self, part: Part) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.sink.part() == part)
            .map(|s| s.name.clone())
            .collect()
    }

    /// Whether the clusters go to a control plane that makes the template's clusters itself
    /// (`--istio-clusters`): only the variants are made, on its endpoints.
    pub fn variants_only(&self) -> bool {
        self.slots.iter().any(|s| matches!(s.sink, Sink::IstioClusters(_)))
    }

    /// Whether some sink carries the table.
    pub fn carry_the_table(&self) -> bool {
        self.slots.iter().any(|s| s.sink.part() == Part::Table)
    }

    /// Whether a push failed somewhere and is to be tried again.
    pub fn needs_retry(&self) -> bool {
        self.slots.iter().any(|s| s.failing.is_some())
    }

    /// The objects the sinks write to the cluster, for [`crate::watch::sink::drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        self.slots.iter().flat_map(|s| s.sink.followed()).collect()
    }

    /// Pushes `output` to every sink this replica writes that does not hold its part of it; records
    /// each answer in `state`.
    pub async fn push(&mut self, output: &Arc<Output>, occasion: Occasion, leader: &Leader, state: &Shared) -> Round {
        self.round(output, None, occasion, leader, state).await
    }

    /// Just became the leader: the cluster sinks get `output` (another replica wrote them meanwhile).
    pub async fn take_over(&mut self, output: &Arc<Output>, leader: &Leader, state: &Shared) -> Round {
        for slot in self.slots.iter_mut().filter(|s| s.sink.writes_to_cluster()) {
            slot.held = None;
        }
        self.round(output, None, Occasion::TakeOver, leader, state).await
    }

    /// Pushes again to the sink named `name`, one of whose objects was deleted or changed by
    /// someone else: `output`, or when it refuses the newest table as too large, the output it took
    /// last. `None`: no sink has that name, or it holds nothing to apply again.
    pub async fn repair(&mut self, name: &str, output: &Arc<Output>, leader: &Leader, state: &Shared) -> Option<Round> {
        let i = self.slots.iter().position(|s| s.name == name)?;
        let refusing = matches!(
            &self.slots[i].held,
            Some(Held {
                outcome: SinkOutcome::Refused,
                ..
            })
        );
        if !refusing {
            self.slots[i].held = None;
            return Some(self.round(output, Some(i), Occasion::Repair, leader, state).await);
        }
        // It keeps the output it took last: that one is applied again, and it still refuses the newest.
        let taken = self.slots[i].taken.clone()?;
        let slot = &self.slots[i];
        let (config, pretty) = (slot.sink.needs_config(), slot.sink.needs_pretty());
        let result = match encode(&mut self.encoder, &taken.table, config, pretty) {
            Ok((config, pretty)) => {
                let encoded = Encoded {
                    output: &taken,
                    config: &config,
                    pretty: &pretty,
                };
                slot.sink.push(&encoded).await
            }
            Err(e) => Err(PushError::Failed(e)),
        };
        record(&mut self.slots[i], &taken, false, Occasion::Repair, result, state);
        Some(self.settle(&taken, false, None, leader, state))
    }

    /// Pushes `output` to the sinks (all, or `only`) this replica writes that do not hold it.
    async fn round(
        &mut self,
        output: &Arc<Output>,
        only: Option<usize>,
        occasion: Occasion,
        leader: &Leader,
        state: &Shared,
    ) -> Round {
        let was_failing = self
            .slots
            .iter()
            .any(|s| s.sink.part() == Part::Table && s.failing.is_some());
        let leading = leader.is_leader();
        let mut due = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.sink.writes_to_cluster() && !leading {
                // The leader writes it: nothing held here, nothing to retry.
                slot.held = None;
                slot.failing = None;
                continue;
            }
            let part = slot.sink.part();
            let holds = slot.held.as_ref().is_some_and(|h| part.same(&h.output, output));
            if !holds && only.is_none_or(|only| only == i) {
                due.push(i);
            }
        }
        let config = due.iter().any(|&i| self.slots[i].sink.needs_config());
        let pretty = due.iter().any(|&i| self.slots[i].sink.needs_pretty());
        let encoded = encode(&mut self.encoder, &output.table, config, pretty);
        let not_encoded = encoded.as_ref().err().cloned();
        let (config, pretty) = encoded.unwrap_or_default();
        let encoded = Encoded {
            output,
            config: &config,
            pretty: &pretty,
        };
        for i in due {
            let slot = &mut self.slots[i];
            if slot.sink.part() == Part::Table && not_encoded.is_some() {
                continue;
            }
            let result = slot.sink.push(&encoded).await;
            record(slot, output, true, occasion, result, state);
        }
        self.settle(output, was_failing, not_encoded, leader, state)
    }

    /// What the round left: the table's outcome, and the push errors `/readyz` shows.
    fn settle(
        &self,
        output: &Output,
        was_failing: bool,
        not_encoded: Option<String>,
        leader: &Leader,
        state: &Shared,
    ) -> Round {
        let leading = leader.is_leader();
        let writable = self
            .slots
            .iter()
            .filter(|s| s.sink.part() == Part::Table && (leading || !s.sink.writes_to_cluster()));
        let mut outcomes = Vec::new();
        let mut table_answered = true;
        for slot in writable {
            match &slot.held {
                Some(held) if Part::Table.same(&held.output, output) => outcomes.push(SinkPush {
                    sink: slot.name.clone(),
                    outcome: held.outcome,
                }),
                _ => table_answered = false,
            }
        }
        let failing = |part: Part| {
            let failing: Vec<&str> = self
                .slots
                .iter()
                .filter(|s| s.sink.part() == part)
                .filter_map(|s| s.failing.as_deref())
                .collect();
            (!failing.is_empty()).then(|| failing.join("; "))
        };
        let mut state = state.lock();
        state.push_error = match &not_encoded {
            Some(why) => Some(format!("internal error: {why}")),
            None => failing(Part::Table),
        };
        state.l4_push_error = failing(Part::L4);
        Round {
            table_answered: table_answered && not_encoded.is_none(),
            was_failing,
            not_encoded,
            outcomes,
        }
    }
}

/// The table as the sinks to push take it: the plugin configuration when one of them takes it
/// (`config`), the indented JSON when a table file does (`pretty`: 36 MB for 100,000 rules, some
/// 100 ms).
fn encode(
    encoder: &mut TableEncoder,
    table: &TableSpec,
    config: bool,
    pretty: bool,
) -> Result<(String, String), String> {
    let pretty = match pretty {
        true => TableEncoding::Json
            .file_text(table)
            .map_err(|e| format!("cannot serialize the table: {e}"))?,
        false => String::new(),
    };
    let config = match config {
        true => encoder.plugin_config(table)?,
        false => String::new(),
    };
    Ok((config, pretty))
}

/// Counts and logs one sink's answer, and records what it holds. `newest`: `output` is the newest
/// (not a refusing sink's last taken one, applied again).
fn record(
    slot: &mut Slot,
    output: &Arc<Output>,
    newest: bool,
    occasion: Occasion,
    result: Result<(), PushError>,
    state: &Shared,
) {
    let name = &slot.name;
    let part = slot.sink.part();
    let table = &output.table.generation;
    let mut state = state.lock();
    let count = state.pushes.entry(name.clone()).or_default();
    match result {
        Ok(()) => {
            count.ok += 1;
            state.sink_answered(name);
            if newest {
                slot.held = Some(Held {
                    output: output.clone(),
                    outcome: SinkOutcome::Ok,
                });
                slot.taken = Some(output.clone());
                if state.refused.remove(name).is_some() {
                    info!(sink = %name, table = %table, "takes tables again");
                }
            }
            slot.failing = None;
            drop(state);
            if part == Part::L4 {
                info!(
                    sink = %name,
                    "L4: {} TLS passthrough host(s), {} TCP/UDP listener(s)",
                    output.l4.passthrough.len(),
                    output.l4.listeners.len()
                );
            }
            match (occasion, part) {
                (Occasion::TakeOver, Part::Table) => {
                    info!(sink = %name, table = %table, "leading: pushed the table held")
                }
                (Occasion::Repair, Part::Table) => {
                    info!(sink = %name, table = %table, "deleted or changed by someone else: applied again")
                }
                (Occasion::Repair, Part::L4) => {
                    info!(sink = %name, "deleted or changed by someone else: applied again")
                }
                _ => {}
            }
        }
        Err(PushError::TooLarge(e)) => {
            count.refused += 1;
            state.sink_answered(name);
            error!(sink = %name, table = %table, "refused: {e}");
            state.refused.insert(name.clone(), format!("table {table}: {e}"));
            if newest {
                slot.held = Some(Held {
                    output: output.clone(),
                    outcome: SinkOutcome::Refused,
                });
            }
            slot.failing = None;
        }
        Err(PushError::Failed(e)) => {
            count.failed += 1;
            let what = match part {
                Part::Table => format!("table {table}: push"),
                Part::L4 => "L4 push".to_owned(),
                Part::Clusters => "clusters push".to_owned(),
            };
            state.sink_failed(name, &what, &e);
            slot.held = None;
            slot.failing = Some(format!("{name}: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::block_on;
    use crate::watch::sink::l4::LdsFile;
    use switchyard_compiler::l4::{L4Route, L4Routes};

    fn output(generation: &str, passthrough: &[&str]) -> Arc<Output> {
        let table = serde_json::json!({"version": 1, "generation": generation, "rules": []});
        let l4 = L4Routes {
            passthrough: passthrough
                .iter()
                .map(|host| L4Route::to_service("shop", Some(host), "tls", 443))
                .collect(),
            listeners: Vec::new(),
        };
        Arc::new(Output {
            table: Arc::new(TableSpec::from_value(table).unwrap()),
            rule_hashes: None,
            l4: Arc::new(l4),
            https: Arc::default(),
            upstream: Arc::default(),
        })
    }

    #[test]
    fn each_sink_is_pushed_only_when_its_part_of_the_output_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (table, lds) = (dir.path().join("t.json"), dir.path().join("lds.json"));
        let state = Shared::default();
        let leader = Leader::always();
        let mut sinks = Sinks::new(vec![
            Sink::TableFile(table.clone()),
            Sink::Lds(LdsFile {
                path: lds.clone(),
                options: Default::default(),
                sds: None,
            }),
        ]);
        let ok = |state: &Shared, name: &str| state.lock().pushes[name].ok;
        let (table_name, lds_name) = (
            format!("table-file {}", table.display()),
            format!("lds-file {}", lds.display()),
        );
        block_on(async {
            let round = sinks.push(&output("g1", &[]), Occasion::Change, &leader, &state).await;
            assert!(round.table_answered && !round.was_failing);
            assert_eq!((ok(&state, &table_name), ok(&state, &lds_name)), (1, 1));
            // A new table, the same L4 routes: the table file only.
            sinks.push(&output("g2", &[]), Occasion::Change, &leader, &state).await;
            assert_eq!((ok(&state, &table_name), ok(&state, &lds_name)), (2, 1));
            // The same table, new L4 routes: the LDS file only.
            sinks
                .push(&output("g2", &["a.example"]), Occasion::Change, &leader, &state)
                .await;
            assert_eq!((ok(&state, &table_name), ok(&state, &lds_name)), (2, 2));
        });
        assert!(std::fs::read_to_string(&lds).unwrap().contains("a.example"));
        assert!(!sinks.needs_retry());
    }

    #[test]
    fn a_retry_pushes_the_failing_sink_only_and_its_failure_is_said_until_it_works() {
        let dir = tempfile::tempdir().unwrap();
        let (good, later) = (dir.path().join("good.json"), dir.path().join("later"));
        // A file where its folder should be: the push fails until the folder can be made.
        std::fs::write(&later, "").unwrap();
        let state = Shared::default();
        let leader = Leader::always();
        let mut sinks = Sinks::new(vec![
            Sink::TableFile(good.clone()),
            Sink::TableFile(later.join("t.json")),
        ]);
        let newest = output("g1", &[]);
        block_on(async {
            let round = sinks.push(&newest, Occasion::Change, &leader, &state).await;
            assert!(!round.table_answered);
            assert!(sinks.needs_retry());
            let error = state.lock().push_error.clone().unwrap();
            assert!(error.contains("later"), "{error}");
            std::fs::remove_file(&later).unwrap();
            let round = sinks.push(&newest, Occasion::Change, &leader, &state).await;
            assert!(round.table_answered && round.was_failing);
        });
        let state = state.lock();
        assert_eq!(
            state.pushes[&format!("table-file {}", good.display())].ok,
            1,
            "not pushed again"
        );
        assert_eq!(state.push_error, None);
        assert!(state.sinks_failing.is_empty());
        assert!(!sinks.needs_retry());
    }
}
