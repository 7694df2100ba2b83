//! The memory all worker processes count in: one anonymous shared mapping, made before
//! the workers are forked, so that any worker's `/metrics` shows every worker's counts.
#![allow(unsafe_code)] // mmap has no safe wrapper for a shared anonymous mapping.

use std::io;

/// Maps `size_of::<T>()` zeroed bytes shared with child processes and never unmaps them
/// (the mapping lives as long as the process).
///
/// `T` must be valid when all-zero and safe to share between processes: a struct of
/// atomics, as `Region` is.
pub fn shared_zeroed<T: Sync>() -> io::Result<&'static T> {
    let len = std::mem::size_of::<T>();
    // SAFETY: a fresh anonymous mapping aliases no Rust object. The kernel zero-fills it
    // and aligns it to a page, which satisfies `T`'s alignment (atomics: 8 bytes).
    // `T`'s fields are atomics, for which all-zero bytes are a valid value, and atomics
    // in shared memory are coherent across processes. Never unmapped, so `'static`.
    unsafe {
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        debug_assert_eq!(ptr as usize % std::mem::align_of::<T>(), 0);
        Ok(&*(ptr as *const T))
    }
}
