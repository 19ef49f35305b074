//! What every processor is given: [`Inputs`], the class decisions, the Service ports and the
//! options it reads, and the status book it writes. The Ingress and HTTPProxy processors (and the
//! kinds to come) each hold one and add only their own state, as Contour's processors share the
//! cache and the DAG they build.

use crate::class::Classes;
use crate::model::Options;
use crate::services::ServicePorts;
use crate::status::StatusBook;

/// The inputs a processor reads and the status book it writes.
pub struct Inputs<'a> {
    /// Which resources are ours (ROUTING.md §1).
    pub classes: &'a Classes,
    /// Backend ports through the Services of the input (ROUTING.md §5).
    pub services: &'a ServicePorts,
    /// The compiler's options.
    pub options: &'a Options,
    /// Where every resource's status is recorded.
    pub book: &'a mut StatusBook,
}
