//! Triton's system shared-memory extension: a client on this host registers a region of a
//! POSIX shared-memory object (`/dev/shm/KEY`), then passes tensors by reference to it.
//!
//! Off unless the server was started with it (`system_shared_memory`): a registration
//! makes the server open a file on the host. Keys are POSIX shared-memory names only
//! (never a path elsewhere), the number of regions and their total size are bounded, and
//! every read or write is checked against the object's size at that moment: the data is
//! copied with `pread`/`pwrite` on the descriptor kept from registration, never through a
//! mapping, so an object the client truncates later gives a clear error, not a SIGBUS.
//!
//! Worker processes share the registrations through `regions.json` in a folder made
//! before they fork (written under a lock, replaced whole); each worker re-reads it when
//! it changes, and opens the objects it has not opened yet.
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use inferwire_codec::protocol::v2::{
    binary, shared_memory_ref, InferRequest, InferResponse, SharedInputs, SharedMemoryRef,
    SHARED_MEMORY_REGION,
};
use inferwire_codec::{CodecError, TensorData};
use serde::{Deserialize, Serialize};

use crate::auth::{Access, Scope};
use crate::error::{Kind, ServeError};

/// Registering and unregistering: with auth, the scope repository writes need; without
/// auth, the server's explicit `system_shared_memory` opt-in is what allows them.
pub const REGISTER: Access = Access {
    scope: Some(Scope::Publish),
    repository: false,
};

/// Where Linux keeps POSIX shared-memory objects (what `shm_open` opens).
const SHM_DIR: &str = "/dev/shm";

#[derive(Debug, Clone)]
pub struct SharedMemoryConfig {
    /// The folder the workers share the registrations through.
    pub dir: PathBuf,
    pub max_regions: usize,
    /// The registered regions' total `byte_size`.
    pub max_bytes: u64,
}

/// One registration, as the status calls show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    pub name: String,
    pub key: String,
    pub offset: u64,
    pub byte_size: u64,
}

/// A registration as `regions.json` keeps it: with a serial, so that a worker tells a
/// region unregistered and registered again (perhaps a new object under the same key)
/// from the one it opened before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    reg: Registration,
    serial: u64,
}

/// A registered region with the object's descriptor.
#[derive(Debug)]
struct Region {
    reg: Registration,
    serial: u64,
    file: File,
}

/// What this worker has read of `regions.json`.
#[derive(Default)]
struct Cache {
    /// The file's inode, modification time and length when read.
    stamp: Option<(u64, i64, i64, u64)>,
    /// Each registration, opened (or why it could not be).
    regions: BTreeMap<String, Result<Arc<Region>, String>>,
}

/// The registry; `None` config: the extension is off.
pub struct SharedMemory {
    config: Option<SharedMemoryConfig>,
    cache: Mutex<Cache>,
}

fn bad(message: impl Into<String>) -> ServeError {
    ServeError::new(Kind::BadRequest, message)
}

fn internal(what: &str, e: impl std::fmt::Display) -> ServeError {
    ServeError::new(
        Kind::Internal,
        format!("shared memory registry: {what}: {e}"),
    )
}

/// Whether `key` names a POSIX shared-memory object: an optional leading `/`, then a
/// name of letters, digits, `.`, `_` and `-` (no other `/`, not `.` or `..`). The name
/// in `/dev/shm`, or why not.
pub fn object_name(key: &str) -> Result<&str, String> {
    let name = key.strip_prefix('/').unwrap_or(key);
    let ok = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(name)
    } else {
        Err(format!(
            "key: {key:?} is not a POSIX shared-memory name: \"/NAME\" with letters, digits, \
             '.', '_' or '-' (up to 255), as shm_open takes it; only objects in /dev/shm \
             can be registered"
        ))
    }
}

/// A serial no earlier registration has had, even one since unregistered (the records
/// forget those): the time in nanoseconds.
fn unique_serial() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A region name: printable, short, not empty.
fn check_region_name(name: &str) -> Result<(), ServeError> {
    if name.is_empty() || name.len() > 256 || name.chars().any(char::is_control) {
        return Err(bad(format!(
            "name: {name:?} is not a region name (1 to 256 printable characters)"
        )));
    }
    Ok(())
}

fn open_object(key: &str) -> Result<File, String> {
    let name = object_name(key)?;
    let path = Path::new(SHM_DIR).join(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        // A link in /dev/shm must not lead elsewhere; a FIFO must not block the open
        // (it is refused below: only regular files are shared-memory objects).
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| format!("key: cannot open shared-memory object {key:?}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("key: {key:?}: {e}"))?;
    if !meta.file_type().is_file() {
        return Err(format!("key: {key:?} is not a shared-memory object"));
    }
    Ok(file)
}

/// `at..at+len` must lie within the object as it is now (the client may have truncated it).
fn check_object(region: &Region, at: u64, len: u64) -> Result<(), ServeError> {
    let size = region
        .file
        .metadata()
        .map_err(|e| bad(format!("region {:?}: {e}", region.reg.name)))?
        .len();
    if at.saturating_add(len) > size {
        return Err(bad(format!(
            "region {:?}: its shared-memory object {:?} is now {size} bytes, too small for \
             bytes {at}..{} (was it truncated or replaced since it was registered?)",
            region.reg.name,
            region.reg.key,
            at.saturating_add(len)
        )));
    }
    Ok(())
}

impl SharedMemory {
    pub fn new(config: Option<SharedMemoryConfig>) -> Self {
        Self {
            config,
            cache: Mutex::new(Cache::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.config.is_some()
    }

    fn config(&self) -> Result<&SharedMemoryConfig, ServeError> {
        self.config.as_ref().ok_or_else(|| {
            bad("system shared memory is off on this server: start it with \
                 --system-shared-memory to let clients on its host pass tensors in \
                 /dev/shm objects")
        })
    }

    fn records_path(config: &SharedMemoryConfig) -> PathBuf {
        config.dir.join("regions.json")
    }

    fn read_records(config: &SharedMemoryConfig) -> Result<Vec<Stored>, ServeError> {
        match std::fs::read(Self::records_path(config)) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| internal("regions.json", e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(internal("regions.json", e)),
        }
    }

    /// Changes the records under the folder's lock; `change` sees the current ones.
    fn change<T>(
        &self,
        change: impl FnOnce(&mut Vec<Stored>) -> Result<T, ServeError>,
    ) -> Result<T, ServeError> {
        let config = self.config()?;
        let lock = File::create(config.dir.join("lock")).map_err(|e| internal("lock", e))?;
        lock.lock().map_err(|e| internal("lock", e))?;
        let mut records = Self::read_records(config)?;
        let out = change(&mut records)?;
        let tmp = config
            .dir
            .join(format!("regions.{}.tmp", std::process::id()));
        let text = serde_json::to_vec(&records).map_err(|e| internal("regions.json", e))?;
        std::fs::write(&tmp, text).map_err(|e| internal("regions.json", e))?;
        std::fs::rename(&tmp, Self::records_path(config))
            .map_err(|e| internal("regions.json", e))?;
        Ok(out)
    }

    /// `POST .../region/NAME/register`: the object is opened (and its size checked) here;
    /// other workers open it when they first see the registration.
    pub fn register(&self, reg: Registration) -> Result<(), ServeError> {
        let config = self.config()?;
        check_region_name(&reg.name)?;
        let file = open_object(&reg.key).map_err(bad)?;
        let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        if reg.byte_size == 0 {
            return Err(bad("byte_size: must be at least 1"));
        }
        let end = reg.offset.checked_add(reg.byte_size);
        if end.is_none_or(|end| end > size) {
            return Err(bad(format!(
                "byte_size: offset {} + byte_size {} runs past the end of {:?}, which is \
                 {size} bytes",
                reg.offset, reg.byte_size, reg.key
            )));
        }
        let (max_regions, max_bytes) = (config.max_regions, config.max_bytes);
        let serial = self.change(|records| {
            if records.iter().any(|r| r.reg.name == reg.name) {
                return Err(bad(format!(
                    "name: a region named {:?} is already registered (unregister it first)",
                    reg.name
                )));
            }
            if records.len() >= max_regions {
                return Err(bad(format!(
                    "{max_regions} regions are registered, as many as this server takes \
                     (shared_memory_max_regions); unregister one first"
                )));
            }
            let total: u64 = records.iter().map(|r| r.reg.byte_size).sum();
            if total.saturating_add(reg.byte_size) > max_bytes {
                return Err(bad(format!(
                    "byte_size: {} bytes more would take the registered regions past \
                     {max_bytes} bytes (shared_memory_max_bytes); {total} are registered",
                    reg.byte_size
                )));
            }
            let serial = records.iter().map(|r| r.serial).max().unwrap_or(0) + 1;
            let serial = serial.max(unique_serial());
            records.push(Stored {
                reg: reg.clone(),
                serial,
            });
            Ok(serial)
        })?;
        // This worker keeps the descriptor it checked.
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .regions
            .insert(reg.name.clone(), Ok(Arc::new(Region { reg, serial, file })));
        Ok(())
    }

    /// `POST .../unregister`: one region, or every one (`None`). Unregistering a region
    /// that is not registered is no error, as in Triton.
    pub fn unregister(&self, name: Option<&str>) -> Result<(), ServeError> {
        self.change(|records| {
            records.retain(|r| name.is_some_and(|n| n != r.reg.name));
            Ok(())
        })
    }

    /// `GET .../status`: one region (an error when not registered), or every one.
    pub fn status(&self, name: Option<&str>) -> Result<Vec<Registration>, ServeError> {
        let records = Self::read_records(self.config()?)?;
        let mut records = records.into_iter().map(|r| r.reg);
        match name {
            None => Ok(records.collect()),
            Some(n) => match records.find(|r| r.name == n) {
                Some(r) => Ok(vec![r]),
                None => Err(bad(format!(
                    "no system shared-memory region named {n:?} is registered"
                ))),
            },
        }
    }

    /// The region `name`, as registered now (by this worker or another).
    fn region(&self, name: &str) -> Result<Arc<Region>, ServeError> {
        let config = self.config()?;
        let path = Self::records_path(config);
        let stamp = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.ino(), m.mtime(), m.mtime_nsec(), m.len()));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.stamp != stamp || stamp.is_none() {
            let records = Self::read_records(config)?;
            let mut regions = BTreeMap::new();
            for Stored { reg, serial } in records {
                let kept = match cache.regions.remove(&reg.name) {
                    Some(Ok(r)) if r.serial == serial => Ok(r),
                    _ => open_object(&reg.key).map(|file| {
                        Arc::new(Region {
                            reg: reg.clone(),
                            serial,
                            file,
                        })
                    }),
                };
                regions.insert(reg.name.clone(), kept);
            }
            *cache = Cache { stamp, regions };
        }
        match cache.regions.get(name) {
            Some(Ok(r)) => Ok(r.clone()),
            Some(Err(why)) => Err(bad(format!("region {name:?}: {why}"))),
            None => Err(bad(format!(
                "no system shared-memory region named {name:?} is registered"
            ))),
        }
    }

    /// Where a tensor of `at` lies in its region's object: the region, and the absolute
    /// offset. `field` names the tensor's parameters in errors.
    fn locate(&self, field: &str, at: &SharedMemoryRef) -> Result<(Arc<Region>, u64), ServeError> {
        let region = self.region(&at.region).map_err(|e| {
            bad(format!(
                "{field}.parameters.shared_memory_region: {}",
                e.message
            ))
        })?;
        let end = at.offset.checked_add(at.byte_size);
        if end.is_none_or(|end| end > region.reg.byte_size) {
            return Err(bad(format!(
                "{field}.parameters: shared_memory_offset {} + shared_memory_byte_size {} \
                 runs past the end of region {:?}, which is {} bytes",
                at.offset, at.byte_size, at.region, region.reg.byte_size
            )));
        }
        let start = region.reg.offset + at.offset;
        Ok((region, start))
    }

    /// An output's target, checked before the model runs.
    pub fn output_target(&self, field: &str, at: SharedMemoryRef) -> Result<Target, ServeError> {
        let (region, start) = self.locate(field, &at)?;
        Ok(Target { at, region, start })
    }

    /// A reader for one request's inputs, taking at most `max_bytes` in all.
    pub fn reader(&self, max_bytes: usize) -> Reader<'_> {
        Reader {
            shm: self,
            left: Cell::new(max_bytes),
        }
    }
}

/// What the CUDA shared-memory calls answer: this server has no GPU support.
pub fn cuda_unsupported() -> ServeError {
    bad(
        "CUDA shared memory is not supported: inferwire has no GPU support; pass tensors \
         in system shared memory (/v2/systemsharedmemory) instead",
    )
}

/// The parameters that pass a tensor by reference.
const PARAMETERS: [&str; 3] = [
    SHARED_MEMORY_REGION,
    "shared_memory_offset",
    "shared_memory_byte_size",
];

/// Outputs a V2 request asks to have written into shared memory: their regions are
/// checked before the model runs, and their shared-memory parameters taken off (requests
/// that differ only in their regions can then share a batch). `write_outputs` writes them.
pub fn output_targets(
    shm: &SharedMemory,
    req: &mut InferRequest,
) -> Result<Vec<(String, Target)>, ServeError> {
    let mut targets = Vec::new();
    for (i, o) in req.outputs.iter_mut().enumerate() {
        let field = format!("outputs[{i}]");
        if let Some(at) = shared_memory_ref(&o.parameters, &field)? {
            targets.push((o.name.clone(), shm.output_target(&field, at)?));
            o.parameters
                .retain(|k, _| !PARAMETERS.contains(&k.as_str()));
        }
    }
    Ok(targets)
}

/// Writes each output `output_targets` found into its region; the reply keeps only its
/// datatype, shape and the shared-memory parameters.
pub fn write_outputs(
    targets: Vec<(String, Target)>,
    response: &mut InferResponse,
) -> Result<(), ServeError> {
    for (name, target) in targets {
        let Some(o) = response.outputs.iter_mut().find(|o| o.name == name) else {
            continue;
        };
        let dtype = o.tensor.dtype();
        // The data goes to the region; the reply keeps the datatype and shape.
        let empty = TensorData::from_le_bytes(&[], dtype)
            .and_then(Result::ok)
            .unwrap_or(TensorData::Bytes(Vec::new()));
        let raw = binary::into_bytes(std::mem::replace(&mut o.tensor.data, empty));
        target.write(&format!("output {name:?}"), &raw)?;
        let at = &target.at;
        o.parameters
            .insert(SHARED_MEMORY_REGION.into(), at.region.clone().into());
        o.parameters
            .insert("shared_memory_byte_size".into(), raw.len().into());
        if at.offset != 0 {
            o.parameters
                .insert("shared_memory_offset".into(), at.offset.into());
        }
    }
    Ok(())
}

/// Reads one request's inputs from their regions.
pub struct Reader<'a> {
    shm: &'a SharedMemory,
    /// Bytes the request may still read (the request-size limit, `max_body_bytes`).
    left: Cell<usize>,
}

impl SharedInputs for Reader<'_> {
    fn read(&self, field: &str, at: &SharedMemoryRef) -> inferwire_codec::Result<Bytes> {
        let codec = |e: ServeError| CodecError::bad_request(e.message);
        let (region, start) = self.shm.locate(field, at).map_err(codec)?;
        let len = usize::try_from(at.byte_size).unwrap_or(usize::MAX);
        if len > self.left.get() {
            return Err(CodecError::bad_request(format!(
                "{field}.parameters.shared_memory_byte_size: {len} bytes would take this \
                 request's inputs past max_body_bytes ({} bytes left)",
                self.left.get()
            )));
        }
        check_object(&region, start, at.byte_size).map_err(codec)?;
        let mut buf = vec![0u8; len];
        region.file.read_exact_at(&mut buf, start).map_err(|e| {
            CodecError::bad_request(format!(
                "{field}: reading region {:?}: {e} (was its object truncated?)",
                at.region
            ))
        })?;
        self.left.set(self.left.get() - len);
        Ok(Bytes::from(buf))
    }
}

/// Where a requested output goes.
pub struct Target {
    pub at: SharedMemoryRef,
    region: Arc<Region>,
    start: u64,
}

impl Target {
    /// Writes `raw` (the output's raw form) into the region. `field` names the output.
    pub fn write(&self, field: &str, raw: &[u8]) -> Result<(), ServeError> {
        if raw.len() as u64 > self.at.byte_size {
            return Err(bad(format!(
                "{field}.parameters.shared_memory_byte_size: {} bytes, but the output \
                 needs {} bytes",
                self.at.byte_size,
                raw.len()
            )));
        }
        check_object(&self.region, self.start, raw.len() as u64)?;
        self.region
            .file
            .write_all_at(raw, self.start)
            .map_err(|e| bad(format!("{field}: writing region {:?}: {e}", self.at.region)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_shm_names_only() {
        assert_eq!(object_name("/input_data"), Ok("input_data"));
        assert_eq!(object_name("out.0-x_y"), Ok("out.0-x_y"));
        for bad in [
            "",
            "/",
            "/a/b",
            "/../etc/passwd",
            "..",
            "/..",
            "/.",
            "a b",
            "/a\0",
        ] {
            assert!(object_name(bad).is_err(), "{bad:?}");
        }
        assert!(object_name(&"x".repeat(256)).is_err());
    }

    fn temp_object(name: &str, len: u64) -> File {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(Path::new(SHM_DIR).join(name))
            .unwrap();
        f.set_len(len).unwrap();
        f
    }

    #[test]
    fn reads_writes_and_survives_truncation() {
        let dir = std::env::temp_dir().join(format!("iw-shm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shm = SharedMemory::new(Some(SharedMemoryConfig {
            dir: dir.clone(),
            max_regions: 2,
            max_bytes: 64,
        }));
        let key = format!("iw-shm-unit-{}", std::process::id());
        let obj = temp_object(&key, 32);
        obj.write_all_at(&[1, 2, 3, 4], 8).unwrap();
        let reg = |name: &str, offset, byte_size| Registration {
            name: name.into(),
            key: format!("/{key}"),
            offset,
            byte_size,
        };
        shm.register(reg("r", 8, 16)).unwrap();
        assert!(shm
            .register(reg("r", 0, 4))
            .unwrap_err()
            .message
            .contains("already"));
        assert!(shm
            .register(reg("big", 0, 33))
            .unwrap_err()
            .message
            .contains("past the end"));
        let at = |offset, byte_size| SharedMemoryRef {
            region: "r".into(),
            offset,
            byte_size,
        };
        let r = shm.reader(1024);
        assert_eq!(&r.read("inputs[0]", &at(0, 4)).unwrap()[..], &[1, 2, 3, 4]);
        let e = r.read("inputs[0]", &at(12, 8)).unwrap_err();
        assert!(e.message.contains("runs past the end of region"), "{e:?}");
        let t = shm.output_target("outputs[0]", at(4, 4)).unwrap();
        t.write("outputs[0]", &[9, 9]).unwrap();
        assert!(t.write("outputs[0]", &[0; 5]).is_err());
        let mut back = [0u8; 2];
        obj.read_exact_at(&mut back, 12).unwrap();
        assert_eq!(back, [9, 9]);
        // The client truncates its object: a clear error, no SIGBUS.
        obj.set_len(4).unwrap();
        let e = r.read("inputs[0]", &at(0, 4)).unwrap_err();
        assert!(e.message.contains("is now 4 bytes"), "{e:?}");
        // Another process's view (a second registry on the same folder) sees the region.
        let other = SharedMemory::new(shm.config.clone());
        assert_eq!(other.status(Some("r")).unwrap()[0].byte_size, 16);
        // Registered again over a new object under the same key: the other worker reads
        // the new object, not the one it opened before.
        let e = other.reader(8).read("inputs[0]", &at(0, 4)).unwrap_err();
        assert!(e.message.contains("is now 4 bytes"), "{e:?}");
        shm.unregister(Some("r")).unwrap();
        std::fs::remove_file(Path::new(SHM_DIR).join(&key)).unwrap();
        let fresh = temp_object(&key, 32);
        fresh.write_all_at(&[7, 7, 7, 7], 8).unwrap();
        shm.register(reg("r", 8, 16)).unwrap();
        assert_eq!(
            &other.reader(8).read("inputs[0]", &at(0, 4)).unwrap()[..],
            &[7, 7, 7, 7]
        );
        shm.unregister(Some("r")).unwrap();
        assert!(other.status(Some("r")).is_err());
        let e = other.reader(8).read("inputs[0]", &at(0, 4)).unwrap_err();
        assert!(
            e.message.contains("no system shared-memory region"),
            "{e:?}"
        );
        std::fs::remove_file(Path::new(SHM_DIR).join(&key)).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
        let off = SharedMemory::new(None);
        assert!(off.status(None).unwrap_err().message.contains("is off"));
    }
}
