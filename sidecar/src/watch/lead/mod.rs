//! Replicas (`--leader-elect`): [`lease`] elects one leader through a Lease; the [`leader`] gate
//! lets only it write to the cluster (status, events, load balancers, the Istio objects).

pub mod leader;
pub mod lease;
