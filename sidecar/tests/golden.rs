//! Golden tables for `examples/`: the binary recompiles every example and must write exactly the
//! checked-in bytes (`sidecar/tests/golden/<example>.json` and `.status.json`, and `.l4.json`, the
//! LDS document of `--l4`, for an example with TransportServers that route); and the same manifests
//! split into one file per document, under shuffled names, give the same bytes.
//!
//! After an intended change: `UPDATE_GOLDEN=1 cargo test -p switchyard --test golden`.

// The compiler's test helpers (examples and their flags), shared rather than copied.
#[path = "../../compiler/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn examples() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(common::examples_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What `switchyard compile` wrote for one example.
struct Outputs {
    table: Vec<u8>,
    status: Vec<u8>,
    /// The LDS document (`--l4`, default address and passthrough port).
    l4: Vec<u8>,
}

/// The LDS document of an example without L4 routes.
const NO_LISTENERS: &str = "{\n  \"resources\": []\n}\n";

/// Runs `switchyard compile PATHS ARGS --l4 FILE`.
fn compile(paths: &[PathBuf], example: &str, out_dir: &Path) -> Outputs {
    let table = out_dir.join("table.json");
    let status = out_dir.join("status.json");
    let l4 = out_dir.join("l4.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    command
        .arg("compile")
        .args(paths)
        .args(common::example_args(example))
        .arg("-o")
        .arg(&table)
        .arg("--status")
        .arg(&status)
        .arg("--l4")
        .arg(&l4);
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{example}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Outputs {
        table: std::fs::read(&table).unwrap(),
        status: std::fs::read(&status).unwrap(),
        l4: std::fs::read(&l4).unwrap(),
    }
}

fn check(path: &Path, actual: &[u8]) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected =
        std::fs::read(path).unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        expected == actual,
        "{} differs from the compiler's output:\n{}",
        path.display(),
        String::from_utf8_lossy(actual)
    );
}

#[test]
fn every_example_compiles_to_its_golden_table_and_status() {
    let names = examples();
    assert!(names.len() >= 12, "{names:?}");
    let out = tempfile::tempdir().unwrap();
    for name in &names {
        let outputs = compile(&[common::examples_dir().join(name)], name, out.path());
        check(&golden_dir().join(format!("{name}.json")), &outputs.table);
        check(&golden_dir().join(format!("{name}.status.json")), &outputs.status);
        let l4_golden = golden_dir().join(format!("{name}.l4.json"));
        if outputs.l4 == NO_LISTENERS.as_bytes() {
            assert!(
                !l4_golden.exists(),
                "{name} routes nothing at L4: remove {}",
                l4_golden.display()
            );
        } else {
            check(&l4_golden, &outputs.l4);
        }
    }
    assert!(
        names.iter().any(|n| golden_dir().join(format!("{n}.l4.json")).exists()),
        "no example routes at L4"
    );
}

#[test]
fn shuffled_files_and_documents_give_byte_identical_tables() {
    let out = tempfile::tempdir().unwrap();
    for name in examples() {
        let outputs = compile(&[common::examples_dir().join(&name)], &name, out.path());
        // Split every manifest into one file per document, named so that sorting reverses them,
        // and pass the files on the command line in a scrambled order.
        let split = tempfile::tempdir().unwrap();
        let mut documents = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(common::examples_dir().join(&name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "yaml")) {
            let text = std::fs::read_to_string(file).unwrap();
            if text.contains("kind: List") {
                documents.push(text);
                continue;
            }
            documents.extend(text.split("\n---\n").map(str::to_owned));
        }
        let count = documents.len();
        let mut paths = Vec::new();
        for (i, document) in documents.into_iter().enumerate() {
            let path = split.path().join(format!("{:03}.yaml", count - i));
            std::fs::write(&path, document).unwrap();
            paths.push(path);
        }
        let mut scrambled = Vec::new();
        let (even, odd): (Vec<_>, Vec<_>) = paths.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        scrambled.extend(odd.into_iter().map(|(_, p)| p));
        scrambled.extend(even.into_iter().rev().map(|(_, p)| p));
        let shuffled = compile(&scrambled, &name, out.path());
        assert!(
            outputs.table == shuffled.table,
            "{name}: the table depends on file order"
        );
        assert!(
            outputs.status == shuffled.status,
            "{name}: the status depends on file order"
        );
        assert!(
            outputs.l4 == shuffled.l4,
            "{name}: the L4 listeners depend on file order"
        );
    }
}

/// Every golden table survives the compact form (`compile --encoding compact`): the decoded
/// document is the JSON's, and both read into the same table.
#[test]
fn the_compact_form_round_trips_every_golden_table() {
    use switchyard_table::{compact, TableSpec};
    let out = tempfile::tempdir().unwrap();
    for name in examples() {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(golden_dir().join(format!("{name}.json"))).unwrap()).unwrap();
        let compact_path = out.path().join("compact.json");
        let status = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .arg("compile")
            .arg(common::examples_dir().join(&name))
            .args(common::example_args(&name))
            .args(["--encoding", "compact", "-o"])
            .arg(&compact_path)
            .status()
            .unwrap();
        assert!(status.success(), "{name}");
        let text = std::fs::read_to_string(&compact_path).unwrap();
        let wrapper: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(wrapper.as_object().map(|o| o.len()), Some(1), "{name}: {text}");
        let decoded = compact::unwrap(wrapper).unwrap();
        assert_eq!(decoded, json, "{name}: the compact form decodes to the golden JSON");
        assert_eq!(
            TableSpec::from_value(decoded).unwrap(),
            TableSpec::from_value(json).unwrap(),
            "{name}"
        );
    }
}
