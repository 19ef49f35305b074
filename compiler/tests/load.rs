//! Reading manifests: multi-document YAML, `kind: List`, JSON, directories, unknown kinds, and
//! errors that name the file, the line, the field and the likely fix.

mod common;

use std::path::PathBuf;

use switchyard_compiler::load::{parse_text, read_paths, LoadError, Loaded};

fn parse(text: &str, file: &str) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    parse_text(text, file, &mut loaded).map(|()| loaded)
}

const UNQUOTED_WILDCARD: &str = "kind: Ingress
apiVersion: networking.k8s.io/v1beta1
metadata:
  name: \"host_priority2\"
  namespace: production
spec:
  rules:
    - host: *.net
      http:
        paths:
          - path: /bar
            backend:
              serviceName: service2
              servicePort: 80
";

#[test]
fn unquoted_wildcard_host_is_a_yaml_error_naming_file_line_and_fix() {
    // Seed 002 writes `host: *.net`: YAML reads `*.net` as an alias.
    let text = format!("# leading comment\n---\n{UNQUOTED_WILDCARD}");
    let error = parse(&text, "hosts.yaml").unwrap_err().to_string();
    assert!(error.starts_with("hosts.yaml:10:"), "{error}");
    assert!(error.contains("YAML"), "{error}");
    assert!(error.contains("must be quoted"), "{error}");
    assert!(error.contains("host: \"*.net\""), "{error}");
}

#[test]
fn quoted_wildcard_host_reads_fine() {
    let loaded = parse(&UNQUOTED_WILDCARD.replace("*.net", "\"*.net\""), "hosts.yaml").unwrap();
    assert_eq!(loaded.objects.ingresses.len(), 1);
}

#[test]
fn yaml_syntax_error_names_file_and_line() {
    let error = parse("kind: Ingress\nmetadata:\n  name: [unclosed\n", "bad.yaml").unwrap_err();
    let LoadError::Syntax { file, line, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!((file.as_str(), *line > 0), ("bad.yaml", true));
}

#[test]
fn schema_error_names_the_document_line_and_field() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n    - host: 42\n      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: s, port: {number: eighty}}}}]}\n";
    let error = parse(text, "web.yaml").unwrap_err().to_string();
    assert!(
        error.starts_with("web.yaml:5: Ingress shop/web: field `spec.rules[0]"),
        "{error}"
    );
}

#[test]
fn object_without_a_name_is_an_error() {
    let error = parse(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {}\nspec: {}\n",
        "x.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("field `metadata.name`"), "{error}");
}

#[test]
fn multi_document_yaml_and_kind_list_are_read() {
    let text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: networking.k8s.io/v1\n    kind: IngressClass\n    metadata: {name: a}\n    spec: {controller: x}\n  - apiVersion: networking.k8s.io/v1\n    kind: IngressClass\n    metadata: {name: b}\n    spec: {controller: y}\n---\n---\n# only a comment\n--- \napiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
    let loaded = parse(text, "list.yaml").unwrap();
    assert_eq!(loaded.objects.ingress_classes.len(), 2);
    assert_eq!(loaded.objects.services.len(), 1);
}

#[test]
fn unknown_kinds_are_skipped_and_counted() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\napiVersion: appprotect.f5.com/v1beta1\nkind: APPolicy\nmetadata: {name: p}\n---\napiVersion: k8s.nginx.org/v1\nkind: Policy\nmetadata: {name: p}\nspec: {accessControl: {allow: [10.0.0.0/8]}}\n---\napiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: vs}\nspec: {host: a.example.com}\n";
    let loaded = parse(text, "x.yaml").unwrap();
    assert_eq!(loaded.skipped.get("v1 ConfigMap"), Some(&2));
    assert_eq!(loaded.skipped.get("appprotect.f5.com/v1beta1 APPolicy"), Some(&1));
    assert_eq!(loaded.objects.policies.len(), 1, "NGINX's Policy is read");
    assert_eq!(loaded.objects.virtual_servers.len(), 1);
}

#[test]
fn json_manifests_are_read_and_their_errors_name_the_line() {
    let json = r#"{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "a"}, "spec": {"controller": "x"}}"#;
    assert_eq!(parse(json, "a.json").unwrap().objects.ingress_classes.len(), 1);
    let error = parse("{\n  \"kind\": \n}", "b.json").unwrap_err().to_string();
    assert!(error.starts_with("b.json:3:"), "{error}");
}

#[test]
fn duplicate_objects_are_warned_about_and_one_copy_is_kept_whatever_the_order() {
    let a = common::simple_ingress("web", "a.example.com", "/", "a", "", None);
    let b = common::simple_ingress("web", "b.example.com", "/", "b", "", None);
    let one = parse(&format!("{a}{b}"), "x.yaml").unwrap();
    let two = parse(&format!("{b}{a}"), "x.yaml").unwrap();
    assert_eq!(one.warnings.len(), 1, "{:?}", one.warnings);
    assert!(
        one.warnings[0].contains("also defined at x.yaml:1"),
        "{:?}",
        one.warnings
    );
    let options = switchyard_compiler::Options::default();
    assert_eq!(
        switchyard_compiler::compile(&one.objects, &options)
            .expect("compiles")
            .table,
        switchyard_compiler::compile(&two.objects, &options)
            .expect("compiles")
            .table
    );
}

#[test]
fn directories_are_read_recursively_taking_only_manifest_files() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("team/nested");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(
        dir.path().join("a.yaml"),
        common::simple_ingress("a", "a.example.com", "/", "a", "", None),
    )
    .unwrap();
    std::fs::write(
        nested.join("b.yml"),
        common::simple_ingress("b", "b.example.com", "/", "b", "", None),
    )
    .unwrap();
    std::fs::write(nested.join("README.md"), "not: [a manifest").unwrap();
    let loaded = read_paths(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!((loaded.files, loaded.objects.ingresses.len()), (2, 2));
}

#[test]
fn unreadable_path_is_an_error_naming_it() {
    let error = read_paths(&[PathBuf::from("/nonexistent/manifests")])
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("/nonexistent/manifests: cannot read"), "{error}");
    let empty = tempfile::tempdir().unwrap();
    let error = read_paths(&[empty.path().to_path_buf()]).unwrap_err().to_string();
    assert!(error.contains("no *.yaml, *.yml or *.json file found"), "{error}");
}
