//! What one watched kind holds: its objects decoded one by one, so that one object that does not
//! fit our types is reported on its own (kind, namespace, name and the field at fault) instead of
//! failing the whole list or watch of its kind.
//!
//! The watchers deliver [`DynamicObject`]s (which always decode); each is then decoded into the
//! typed object the compiler reads, held behind an [`Arc`]: every rebuild's snapshot shares the
//! objects held instead of copying them, and an object the watch did not touch is the same `Arc`
//! from one snapshot to the next (the incremental compiler's fast path). A relist fills a fresh
//! buffer that replaces the contents at its end, as kube's reflector does.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde::de::DeserializeOwned;
use switchyard_compiler::objects::Kind;

use crate::watch::cluster::FIELD_MANAGER;

/// An object the API serves that does not decode into our types.
#[derive(Debug, Clone, PartialEq)]
pub struct Undecodable {
    /// Its kind (`HTTPProxy`, ...).
    pub kind: Kind,
    /// Its metadata (class annotations included).
    pub metadata: ObjectMeta,
    /// `spec.ingressClassName`, when that much is readable.
    pub class_name: Option<String>,
    /// The field at fault and why: `spec.routes[0].services[0].port: invalid type: ...`.
    pub message: String,
}

impl Undecodable {
    /// `namespace/name`.
    pub fn name(&self) -> String {
        key(&self.metadata)
    }
}

/// What a relist gathers: the objects that decoded and those that did not, by `namespace/name`.
type Contents<K> = (BTreeMap<String, Arc<K>>, BTreeMap<String, Undecodable>);

/// The objects of one kind (and namespace), by `namespace/name`.
#[derive(Debug)]
pub struct Held<K> {
    /// Whether the first list finished.
    pub synced: bool,
    /// The objects that decoded.
    pub objects: BTreeMap<String, Arc<K>>,
    /// The objects that did not.
    pub undecodable: BTreeMap<String, Undecodable>,
    /// The relist in progress, replacing both maps at its end.
    relist: Option<Contents<K>>,
    kind: Kind,
}

fn key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// The annotation `kubectl apply` keeps a whole copy of the object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What is held of an object's metadata: everything but the bulk routing never reads, i.e. the
/// `managedFields` of other managers (ours are kept, without their field sets: they say we wrote
/// status) and kubectl's last-applied copy. With 13,000 objects this is most of the memory.
fn slim(mut object: DynamicObject) -> DynamicObject {
    if let Some(fields) = &mut object.metadata.managed_fields {
        fields.retain(|f| f.manager.as_deref() == Some(FIELD_MANAGER));
        for field in fields.iter_mut() {
            field.fields_v1 = None;
        }
    }
    if let Some(annotations) = &mut object.metadata.annotations {
        annotations.remove(LAST_APPLIED);
    }
    object
}

/// Decodes one object (slimmed); `Err` names the field at fault (boxed: an object's metadata is
/// large, and the `Ok` path should not carry its size).
pub fn decode<K: DeserializeOwned>(kind: Kind, object: &DynamicObject) -> Result<K, Box<Undecodable>> {
    let object = &slim(object.clone());
    let undecodable = |message: String, class_name: Option<String>| {
        Box::new(Undecodable {
            kind,
            metadata: object.metadata.clone(),
            class_name,
            message,
        })
    };
    // Never expected (a DynamicObject is JSON already); reported like any object that does not
    // decode rather than decoded from `null`.
    let value = serde_json::to_value(object).map_err(|e| undecodable(format!("does not serialize: {e}"), None))?;
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let class_name = value["spec"]["ingressClassName"].as_str().map(str::to_owned);
        undecodable(format!("{}: {}", e.path(), e.inner()), class_name)
    })
}

impl<K: DeserializeOwned> Held<K> {
    /// An empty store for `kind`.
    pub fn new(kind: Kind) -> Held<K> {
        Held {
            synced: false,
            objects: BTreeMap::new(),
            undecodable: BTreeMap::new(),
            relist: None,
            kind,
        }
    }

    /// A relist starts.
    pub fn relist(&mut self) {
        self.relist = Some((BTreeMap::new(), BTreeMap::new()));
    }

    /// An object of the relist in progress.
    pub fn relisted(&mut self, object: &DynamicObject) {
        let kind = self.kind;
        if let Some((objects, undecodable)) = &mut self.relist {
            put(kind, objects, undecodable, object);
        }
    }

    /// The relist is complete: its objects replace the held ones.
    pub fn relist_done(&mut self) {
        if let Some((objects, undecodable)) = self.relist.take() {
            self.objects = objects;
            self.undecodable = undecodable;
        }
        self.synced = true;
    }

    /// An object was added or changed.
    pub fn apply(&mut self, object: &DynamicObject) {
        put(self.kind, &mut self.objects, &mut self.undecodable, object);
    }

    /// An object was deleted.
    pub fn delete(&mut self, object: &DynamicObject) {
        let key = key(&object.metadata);
        self.objects.remove(&key);
        self.undecodable.remove(&key);
    }
}

fn put<K: DeserializeOwned>(
    kind: Kind,
    objects: &mut BTreeMap<String, Arc<K>>,
    undecodable: &mut BTreeMap<String, Undecodable>,
    object: &DynamicObject,
) {
    let key = key(&object.metadata);
    match decode(kind, object) {
        Ok(decoded) => {
            undecodable.remove(&key);
            objects.insert(key, Arc::new(decoded));
        }
        Err(failure) => {
            objects.remove(&key);
            undecodable.insert(key, *failure);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchyard_compiler::objects::HTTPProxy;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_object_that_does_not_decode_is_held_apart_with_the_field_at_fault() {
        let mut held: Held<HTTPProxy> = Held::new(Kind::HTTPProxy);
        held.relist();
        held.relisted(&object(
            json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "good", "namespace": "shop"}, "spec": {}}),
        ));
        held.relisted(&object(
            json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "bad", "namespace": "shop"},
            "spec": {"ingressClassName": "sy", "routes": [{"services": [{"name": "a", "port": "eighty"}]}]}}),
        ));
        held.relist_done();
        assert_eq!(held.objects.keys().collect::<Vec<_>>(), ["shop/good"]);
        let bad = &held.undecodable["shop/bad"];
        assert!(
            bad.message.starts_with("spec.routes[0].services[0].port: "),
            "{}",
            bad.message
        );
        assert_eq!(bad.class_name.as_deref(), Some("sy"));
    }

    #[test]
    fn an_object_the_watch_did_not_touch_is_shared_not_copied() {
        let proxy = |name: &str, fqdn: &str| {
            object(json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
                "metadata": {"name": name, "namespace": "shop"}, "spec": {"virtualhost": {"fqdn": fqdn}}}))
        };
        let mut held: Held<HTTPProxy> = Held::new(Kind::HTTPProxy);
        held.relist();
        held.relisted(&proxy("a", "a.example"));
        held.relisted(&proxy("b", "b.example"));
        held.relist_done();
        let (a, b) = (held.objects["shop/a"].clone(), held.objects["shop/b"].clone());
        held.apply(&proxy("b", "b2.example"));
        assert!(Arc::ptr_eq(&a, &held.objects["shop/a"]), "untouched: the same object");
        assert!(!Arc::ptr_eq(&b, &held.objects["shop/b"]), "changed: a new object");
        assert_eq!(
            b.spec.virtualhost.as_ref().unwrap().fqdn,
            "b.example",
            "a snapshot keeps its version"
        );
    }

    #[test]
    fn only_our_managed_fields_are_held_and_no_last_applied_copy() {
        let mut held: Held<HTTPProxy> = Held::new(Kind::HTTPProxy);
        held.apply(&object(json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "p", "namespace": "shop",
                "annotations": {LAST_APPLIED: "{...}", "kubernetes.io/ingress.class": "sy"},
                "managedFields": [
                    {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                    {"manager": "switchyard", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}
                ]}, "spec": {}})));
        let meta = &held.objects["shop/p"].metadata;
        let managers: Vec<_> = meta
            .managed_fields
            .iter()
            .flatten()
            .map(|f| f.manager.as_deref())
            .collect();
        assert_eq!(managers, [Some("switchyard")]);
        assert!(crate::watch::status::wrote_status(meta));
        let annotations = meta.annotations.as_ref().unwrap();
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["kubernetes.io/ingress.class"]);
    }
}
