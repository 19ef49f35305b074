//! The per-resource request metrics in the module ([`switchyard_table::metrics`]): the same names
//! and labels as the wasm filter's, handed to Envoy as real labels (the ABI has them), so no
//! `stats_tags` is needed. A worker notes each request's series when its rule wins (in its own
//! [`SeriesBook`]: no lock on the request path) and counts it when the stream completes.

use std::cell::RefCell;

use switchyard_request::meter::{Ended, SeriesBook, SeriesId, Winner};
use switchyard_table::metrics::{
    DURATION, DURATION_LABELS, FOLDED_RESOURCES, REQUESTS, REQUEST_LABELS, STATUS_CLASSES,
};

use crate::abi::{self, ConfigEnvoyPtr, FilterEnvoyPtr, ModuleBuffer, METRICS_SUCCESS};

thread_local! {
    /// This worker's series.
    static BOOK: RefCell<SeriesBook> = RefCell::new(SeriesBook::default());
}

/// The series `winner`'s request counts in, in this worker's book (`None`: never, the book being
/// busy).
pub fn note(winner: Winner<'_>) -> Option<SeriesId> {
    BOOK.with(|book| Some(book.try_borrow_mut().ok()?.id(winner.series)))
}

/// The ids of a filter configuration's per-resource metrics; one Envoy refused is `None`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceMetrics {
    requests: Option<usize>,
    duration: Option<usize>,
    folded: Option<usize>,
}

impl ResourceMetrics {
    /// Defines them in `config`'s stats scope.
    ///
    /// # Safety
    /// `config` is the configuration Envoy is creating (the running `config_new` hook's).
    pub unsafe fn define(config: ConfigEnvoyPtr) -> ResourceMetrics {
        let mut requests_labels = REQUEST_LABELS.map(ModuleBuffer::of);
        let mut duration_labels = DURATION_LABELS.map(ModuleBuffer::of);
        let (mut requests, mut duration, mut folded) = (0usize, 0usize, 0usize);
        // SAFETY: `config` is the configuration Envoy is creating; names and labels are lent for
        // each call.
        let results = unsafe {
            [
                abi::envoy_dynamic_module_callback_http_filter_config_define_counter(
                    config,
                    ModuleBuffer::of(REQUESTS),
                    requests_labels.as_mut_ptr(),
                    requests_labels.len(),
                    &mut requests,
                ),
                abi::envoy_dynamic_module_callback_http_filter_config_define_histogram(
                    config,
                    ModuleBuffer::of(DURATION),
                    duration_labels.as_mut_ptr(),
                    duration_labels.len(),
                    &mut duration,
                ),
                abi::envoy_dynamic_module_callback_http_filter_config_define_gauge(
                    config,
                    ModuleBuffer::of(FOLDED_RESOURCES),
                    std::ptr::null_mut(),
                    0,
                    &mut folded,
                ),
            ]
        };
        let ok = |i: usize, id: usize| (results[i] == METRICS_SUCCESS).then_some(id);
        ResourceMetrics {
            requests: ok(0, requests),
            duration: ok(1, duration),
            folded: ok(2, folded),
        }
    }

    /// Sets the folded resources' gauge.
    ///
    /// # Safety
    /// `config` is the configuration that defined these metrics, during its `config_new` hook.
    pub unsafe fn set_folded(&self, config: ConfigEnvoyPtr, folded: u32) {
        if let Some(id) = self.folded {
            // SAFETY: the caller's contract.
            unsafe {
                abi::envoy_dynamic_module_callback_http_filter_config_set_gauge(
                    config,
                    id,
                    std::ptr::null_mut(),
                    0,
                    u64::from(folded),
                );
            }
        }
    }

    /// Counts the request of stream `filter`, noted in `series`, which ended as `ended`.
    ///
    /// # Safety
    /// `filter` is the running hook's stream, created from the configuration that defined these
    /// metrics.
    pub unsafe fn count(&self, filter: FilterEnvoyPtr, series: SeriesId, ended: Ended) {
        BOOK.with(|book| {
            let Ok(book) = book.try_borrow() else {
                return;
            };
            let [kind, namespace, resource, backend] = book.labels(series);
            let class = STATUS_CLASSES
                .get(ended.status_class)
                .copied()
                .unwrap_or(STATUS_CLASSES[0]);
            let mut values = [kind, namespace, resource, backend, class].map(ModuleBuffer::of);
            // SAFETY: the caller's contract; the label values are lent for each call.
            unsafe {
                if let Some(id) = self.requests {
                    abi::envoy_dynamic_module_callback_http_filter_increment_counter(
                        filter,
                        id,
                        values.as_mut_ptr(),
                        values.len(),
                        1,
                    );
                }
                if let Some(id) = self.duration {
                    abi::envoy_dynamic_module_callback_http_filter_record_histogram_value(
                        filter,
                        id,
                        values.as_mut_ptr(),
                        DURATION_LABELS.len(),
                        ended.duration_ms,
                    );
                }
            }
        });
    }
}

/// The response code of stream `filter` (`None` before a response: the client went away).
///
/// # Safety
/// `filter` is the running hook's stream.
pub unsafe fn response_code(filter: FilterEnvoyPtr) -> Option<u64> {
    let mut code = 0u64;
    // SAFETY: the caller's contract; `code` is a live local.
    let found = unsafe {
        abi::envoy_dynamic_module_callback_http_filter_get_attribute_int(filter, abi::RESPONSE_CODE, &mut code)
    };
    found.then_some(code)
}
