//! Compile once per process: one wasmtime `Engine`, one `Linker` with every host function, and a
//! cache of loaded modules keyed by path, size and modification time, each kept as an
//! `InstancePre` so that a new simulator only instantiates. Loading checks, before anything runs,
//! that the module is proxy-wasm 0.2.x and that host-sim provides every import it names.
//!
//! Across processes, compiled code is also kept on disk (a test binary or a `host-sim` command
//! then skips Cranelift, which takes seconds for a filter in a debug build): in
//! `$HOST_SIM_CACHE_DIR`, else `$XDG_CACHE_HOME/host-sim` or `~/.cache/host-sim`; set
//! `HOST_SIM_CACHE_DIR` to an empty value to turn it off. Entries are named by a hash of the module's
//! bytes, wasmtime's version and the engine's settings, written atomically, and only ever produced
//! by host-sim itself; an entry wasmtime refuses is compiled again.

use crate::error::SimError;
use crate::host;
use crate::state::{Host, Shared};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;
use wasmtime::{Config, Engine, ExternType, InstancePre, Linker, Module, Store};

/// A module ready to instantiate.
pub(crate) struct Loaded {
    pub path: PathBuf,
    pub pre: InstancePre<Host>,
}

struct Runtime {
    engine: Engine,
    linker: Linker<Host>,
    /// `module::name` of every function the linker defines.
    provided: HashSet<String>,
}

type Key = (PathBuf, u64, Option<SystemTime>);

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let mut config = Config::new();
        if std::env::var_os("HOST_SIM_PERF_MAP").is_some() {
            // `perf record` then names the module's functions (/tmp/perf-PID.map).
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).unwrap_or_else(|e| {
            // The default configuration only fails when the platform has no JIT support at all.
            panic!("host-sim: wasmtime cannot run on this platform: {e}")
        });
        let mut linker = Linker::new(&engine);
        // Defining a fixed set of distinct names cannot fail; a failure is a bug in host-sim.
        host::add_to_linker(&mut linker).expect("host-sim defines each host function once");
        let mut store = Store::new(&engine, Host::new(Arc::new(Mutex::new(Shared::default()))));
        let provided = linker.iter(&mut store).map(|(m, n, _)| format!("{m}::{n}")).collect();
        Runtime {
            engine,
            linker,
            provided,
        }
    })
}

pub(crate) fn engine() -> &'static Engine {
    &runtime().engine
}

/// The module at `path`, compiled at most once per process (again if the file changes).
pub(crate) fn load(path: &Path) -> Result<Arc<Loaded>, SimError> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Loaded>>>> = OnceLock::new();
    let read_error = |source| SimError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let key = (canonical, meta.len(), meta.modified().ok());
    // Compiling under the lock makes parallel tests of one module wait for a single compilation.
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(loaded) = cache.get(&key) {
        return Ok(loaded.clone());
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    let loaded = Arc::new(compile(path, &bytes)?);
    cache.insert(key, loaded.clone());
    Ok(loaded)
}

fn compile(path: &Path, bytes: &[u8]) -> Result<Loaded, SimError> {
    let rt = runtime();
    let path_buf = path.to_path_buf();
    let module = match cached(&rt.engine, bytes) {
        Some(module) => module,
        None => {
            let module = Module::from_binary(&rt.engine, bytes).map_err(|e| SimError::Compile {
                path: path_buf.clone(),
                message: format!("{e:#}"),
            })?;
            store_cached(&rt.engine, bytes, &module);
            module
        }
    };

    let exports: Vec<&str> = module.exports().map(|e| e.name()).collect();
    if !exports
        .iter()
        .any(|e| *e == "proxy_abi_version_0_2_1" || *e == "proxy_abi_version_0_2_0")
    {
        let abis: Vec<&str> = exports
            .iter()
            .copied()
            .filter(|e| e.starts_with("proxy_abi_version"))
            .collect();
        let found = if abis.is_empty() {
            String::new()
        } else {
            format!(" (it exports {})", abis.join(", "))
        };
        return Err(SimError::NotProxyWasm { path: path_buf, found });
    }

    let missing: Vec<String> = module
        .imports()
        .filter_map(|import| {
            let name = format!("{}::{}", import.module(), import.name());
            match import.ty() {
                ExternType::Func(_) if rt.provided.contains(&name) => None,
                ExternType::Func(_) => Some(name),
                _ => Some(format!("{name} (not a function)")),
            }
        })
        .collect();
    if !missing.is_empty() {
        return Err(SimError::MissingImports {
            path: path_buf,
            missing,
        });
    }

    let pre = rt.linker.instantiate_pre(&module).map_err(|e| SimError::Link {
        path: path_buf.clone(),
        message: format!("{e:#}"),
    })?;
    Ok(Loaded { path: path_buf, pre })
}

fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("HOST_SIM_CACHE_DIR") {
        Some(dir) if dir.is_empty() => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|d| !d.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            })
            .map(|d| d.join("host-sim")),
    }
}

fn cache_file(engine: &Engine, bytes: &[u8]) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    Some(cache_dir()?.join(format!("{:016x}-{}.cwasm", hasher.finish(), bytes.len())))
}

fn cached(engine: &Engine, bytes: &[u8]) -> Option<Module> {
    let file = cache_file(engine, bytes)?;
    if !file.is_file() {
        return None;
    }
    // SAFETY: the file was written by `store_cached` below from `Module::serialize` (its name is a
    // hash of the module and of this engine's settings), and wasmtime checks that its header
    // matches this engine before using it.
    unsafe { Module::deserialize_file(engine, &file) }.ok()
}

fn store_cached(engine: &Engine, bytes: &[u8], module: &Module) {
    // The cache is an optimization: any failure here just means compiling again next time.
    let Some(file) = cache_file(engine, bytes) else { return };
    let Ok(serialized) = module.serialize() else { return };
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = dir.join(format!(
        ".{}.{}",
        std::process::id(),
        file.file_name().and_then(|n| n.to_str()).unwrap_or("module")
    ));
    if std::fs::write(&temp, serialized).is_ok() && std::fs::rename(&temp, &file).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
