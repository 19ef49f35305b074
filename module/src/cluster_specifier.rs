//! The module as Envoy's cluster specifier (`envoy.router.cluster_specifier_plugin.dynamic_modules`):
//! a route whose `cluster_specifier_plugin` is this module asks it for the cluster **during Envoy's
//! route match**, so a request the table routes needs no cluster header, no second route match and,
//! when nothing else is asked of the filter, no HTTP filter at all (docs/deploy-envoy.md, "The
//! cluster specifier").
//!
//! The specifier holds no table of its own: it routes by the table of the module's HTTP filter whose
//! `filter_name` is the specifier's `specifier_name` (by default [`ACTIONS_FILTER_NAME`]), which
//! `switchyard watch` keeps current through ECDS as before. Such a filter answers only what a route
//! match cannot (local replies, rewrites, header actions, the debug header: [`crate::envoy_host::ActionsHost`])
//! and publishes its table in a [`TableSlot`] when Envoy creates its configuration, on the main
//! thread; the specifier reads the slot on each selection. Both match with the table crate's
//! routing on the same request, so there is one routing logic and one decoded table.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use switchyard_table::compact::Miniz;
use switchyard_table::ActionSpec;

use crate::abi::{self, SelectionEnvoyPtr};
use crate::envoy_host::read_headers;
use crate::headers::HeaderBlock;
use crate::host::{Host, HostCallFailed};
use crate::request::HostRequest;
use crate::shared_table::SharedTable;

/// The `filter_name` of the module's HTTP filter beside the cluster specifier (a name that starts
/// with it selects that role: [`is_actions_filter`]), and the `specifier_name` a specifier follows
/// when it names none.
pub const ACTIONS_FILTER_NAME: &str = "switchyard-actions";

/// Whether a filter named `name` runs beside the cluster specifier (actions only, its table
/// published) rather than routing by the cluster header.
pub fn is_actions_filter(name: &str) -> bool {
    name.starts_with(ACTIONS_FILTER_NAME)
}

/// The table a filter configuration publishes under its name, for the specifiers that follow it.
#[derive(Default)]
pub struct TableSlot {
    table: RwLock<Option<SharedTable>>,
}

/// Every slot by name (a few at most: one per actions filter name in Envoy's configuration).
static SLOTS: Mutex<Vec<(String, Arc<TableSlot>)>> = Mutex::new(Vec::new());

impl TableSlot {
    /// The slot of the filter named `name` (created empty on first use).
    pub fn named(name: &str) -> Arc<TableSlot> {
        let mut slots = SLOTS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, slot)) = slots.iter().find(|(n, _)| n == name) {
            return Arc::clone(slot);
        }
        let slot = Arc::new(TableSlot::default());
        slots.push((name.to_owned(), Arc::clone(&slot)));
        slot
    }

    /// Serves `table` from now on (a new filter configuration: a push, or Envoy's start).
    pub fn publish(&self, table: &SharedTable) {
        *self.table.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(table));
    }

    /// Withdraws `table` if it is still the one served (its configuration is destroyed; after a push
    /// the newer table was published before, and stays).
    pub fn retract(&self, table: &SharedTable) {
        let mut current = self.table.write().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|t| Arc::ptr_eq(t, table)) {
            *current = None;
        }
    }

    /// The table served now.
    pub fn current(&self) -> Option<SharedTable> {
        self.table.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// One cluster specifier configuration (one route's `cluster_specifier_plugin`).
pub struct ClusterSpecifier {
    slot: Arc<TableSlot>,
}

impl ClusterSpecifier {
    /// The specifier following the filter named `follows` (empty: [`ACTIONS_FILTER_NAME`]).
    pub fn new(follows: &str) -> ClusterSpecifier {
        let follows = if follows.is_empty() {
            ACTIONS_FILTER_NAME
        } else {
            follows
        };
        ClusterSpecifier {
            slot: TableSlot::named(follows),
        }
    }

    /// Picks the cluster of the request whose selection is `selection`: the winner's backend (by
    /// weight, or the canary's) when the winner is a route. `false` (no decision) otherwise: no rule
    /// matched, or the winner answers locally (the filter beside answers then, before the router
    /// needs a cluster), or no table is served yet.
    ///
    /// # Safety
    /// `selection` is the running `on_cluster_specifier_select` hook's.
    pub unsafe fn select(&self, selection: SelectionEnvoyPtr) -> bool {
        let Some(table) = self.slot.current() else {
            return false;
        };
        let view = SelectionHeaders { selection };
        let request = HostRequest::new(&view, table.head().cluster_header());
        // SAFETY: the running hook's selection.
        let random = unsafe { abi::envoy_dynamic_module_callback_cluster_specifier_get_random_value(selection) };
        let picked = table.route(&request, random, &Miniz, |decision| {
            let Some(decision) = decision else {
                return false;
            };
            let (ActionSpec::Route(_), Some(backend)) = (decision.rule.action(), decision.backend) else {
                return false;
            };
            // SAFETY: the running hook's selection; Envoy copies the name during the call.
            unsafe {
                abi::envoy_dynamic_module_callback_cluster_specifier_set_cluster_name(
                    selection,
                    abi::ModuleBuffer::of(&backend.cluster),
                );
            }
            true
        });
        // A shard that does not decode (never: the module keeps every shard decoded) decides nothing;
        // the filter beside answers the request 503.
        picked.unwrap_or(false)
    }
}

/// The request headers of one selection, as the filter's request view reads them. A route match
/// changes nothing: the writes of [`Host`] are refused (the specifier never makes them).
struct SelectionHeaders {
    selection: SelectionEnvoyPtr,
}

impl Host for SelectionHeaders {
    fn request_headers(&self) -> HeaderBlock {
        // SAFETY: `selection` is the running hook's (see `select`); `fill` gets an array of the
        // length Envoy reported.
        unsafe {
            read_headers(
                abi::envoy_dynamic_module_callback_cluster_specifier_get_request_headers_size(self.selection),
                |array| abi::envoy_dynamic_module_callback_cluster_specifier_get_request_headers(self.selection, array),
            )
        }
    }

    fn set_request_header(&mut self, _: &str, _: &str) -> Result<(), HostCallFailed> {
        Err(crate::envoy_host::REFUSED)
    }

    fn remove_request_header(&mut self, _: &str) {}

    fn send_response(&mut self, _: u16, _: &[(&str, &str)], _: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SharedTable {
        let text = br#"{"version":1,"rules":[{"name":"a#0","path":{"type":"prefix","value":"/"},
            "action":{"route":{"backends":[{"cluster":"p/a:80"}]}}}]}"#;
        let Ok(table) = crate::config::load_table(text, &switchyard_table::compact::Miniz) else {
            panic!("the test table is valid");
        };
        crate::shared_table::Table::shared(crate::loaded::Loaded::Whole(table))
    }

    #[test]
    fn a_slot_serves_the_newest_table_and_a_destroyed_older_one_does_not_withdraw_it() {
        let slot = TableSlot::named("test-slot-order");
        let (old, new) = (table(), table());
        slot.publish(&old);
        slot.publish(&new);
        slot.retract(&old);
        assert!(slot.current().is_some_and(|t| Arc::ptr_eq(&t, &new)));
        slot.retract(&new);
        assert!(slot.current().is_none());
    }

    #[test]
    fn a_specifier_follows_the_slot_of_the_filter_it_names() {
        let table = table();
        TableSlot::named("test-slot-follow").publish(&table);
        let specifier = ClusterSpecifier::new("test-slot-follow");
        assert!(specifier.slot.current().is_some_and(|t| Arc::ptr_eq(&t, &table)));
        assert!(Arc::ptr_eq(
            &ClusterSpecifier::new("").slot,
            &TableSlot::named(ACTIONS_FILTER_NAME)
        ));
    }

    #[test]
    fn only_filters_named_for_the_specifier_answer_actions_only() {
        assert!(is_actions_filter("switchyard-actions"));
        assert!(!is_actions_filter("switchyard"));
    }
}
