//! ROUTING.md §7's flags (`--ingress-nginx-*`) as the compiler's options hold them. A leaf: the
//! compiler's [`crate::model::Options`] hold a [`Flags`], and [`super::class`] reads it.

/// The default of `--ingress-nginx-controller`.
pub const DEFAULT_CONTROLLER: &str = "k8s.io/ingress-nginx";

/// The default of `--ingress-nginx-annotations-prefix`.
pub const DEFAULT_ANNOTATIONS_PREFIX: &str = "nginx.ingress.kubernetes.io";

/// The `--ingress-nginx-*` flags (§7 is off when `class` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    /// `--ingress-nginx-class NAME`: turns §7 on.
    pub class: Option<String>,
    /// `--ingress-nginx-controller` (default [`DEFAULT_CONTROLLER`]).
    pub controller: String,
    /// `--ingress-nginx-class-by-name`: an IngressClass named like `class` is ingress-nginx's too.
    pub class_by_name: bool,
    /// `--ingress-nginx-without-class`: an Ingress with no class at all is ingress-nginx's.
    pub without_class: bool,
    /// `--ingress-nginx-annotations-prefix` (default [`DEFAULT_ANNOTATIONS_PREFIX`]).
    pub annotations_prefix: String,
    /// `--ingress-nginx-configmap NAMESPACE/NAME`.
    pub configmap: Option<(String, String)>,
    /// `--ingress-nginx-enable-ssl-passthrough` (its `--enable-ssl-passthrough`): `ssl-passthrough`
    /// is honoured (ROUTING.md §8.4).
    pub enable_ssl_passthrough: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            class: None,
            controller: DEFAULT_CONTROLLER.to_owned(),
            class_by_name: false,
            without_class: false,
            annotations_prefix: DEFAULT_ANNOTATIONS_PREFIX.to_owned(),
            configmap: None,
            enable_ssl_passthrough: false,
        }
    }
}

impl Flags {
    /// The usage error of §7.1: `--ingress-nginx-without-class` with `--empty-ingress-class`.
    pub fn check(&self, empty_ingress_class: bool) -> Result<(), String> {
        match self.without_class && empty_ingress_class {
            true => Err(
                "--ingress-nginx-without-class and --empty-ingress-class cannot both be on: an Ingress \
                         without a class would belong to both controllers"
                    .to_owned(),
            ),
            false => Ok(()),
        }
    }
}
