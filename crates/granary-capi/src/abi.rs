//! What C hands in and gets back, read and written in one place: versioned structs (first
//! field `uint32_t struct_size`), strings and string arrays, byte ranges, handles and out
//! pointers. Every function here is `unsafe` with the one promise the caller (the exported
//! function, passing on its own `# Safety` contract) makes: a non-NULL pointer points at what
//! its type says, for as long as the call. NULL, sizes and UTF-8 are checked here and become
//! [`Failure`]s, never undefined behaviour.
//!
//! *Versioning rule:* a struct is read or written through `struct_size` bytes. Smaller than
//! the struct's first version is refused (`GRANARY_ERROR_STRUCT_SIZE`). Larger (a caller
//! built against a newer `granary.h`) is taken when every byte past the fields this version
//! knows is zero on input (those fields left at their defaults), and on output those bytes
//! are zeroed and `struct_size` is set to the bytes granary filled.

use crate::error::{Failure, GranaryResult};
use std::ffi::{c_char, c_void, CStr};

/// A C struct whose first field is `uint32_t struct_size`.
///
/// # Safety
///
/// The type is `#[repr(C)]` with a `u32` `struct_size` as its first field, and every bit
/// pattern a conforming C caller can write into its fields is a valid value (integers, raw
/// pointers, nullable function pointers: no `bool`, no Rust enum).
pub unsafe trait Versioned: Copy + Default {
    /// The C name, for messages.
    const NAME: &'static str;
    /// The size of its first published version.
    const V1_SIZE: usize;
}

fn size_error(function: &str, name: &str, size: usize, v1: usize) -> Failure {
    Failure::new(
        GranaryResult::GRANARY_ERROR_STRUCT_SIZE,
        format!("{function}: {name}.struct_size is {size}; this granary takes {v1} (its first version) or more: set it to sizeof({name})"),
    )
}

/// Reads the struct at `p` by its `struct_size` (the module's versioning rule).
///
/// # Safety
///
/// `p` is NULL or points at `struct_size` readable bytes (at least 4).
pub unsafe fn read_in<T: Versioned>(p: *const T, function: &str) -> Result<T, Failure> {
    if p.is_null() {
        return Err(Failure::null(function, T::NAME));
    }
    // SAFETY: `p` points at a struct whose first field is a u32 (the caller's promise); read
    // unaligned, as C may place it anywhere.
    let size = unsafe { p.cast::<u32>().read_unaligned() } as usize;
    if size < T::V1_SIZE {
        return Err(size_error(function, T::NAME, size, T::V1_SIZE));
    }
    let known = std::mem::size_of::<T>();
    if size > known {
        // SAFETY: the caller's struct is `size` bytes long (its promise), so the bytes from
        // `known` to `size` are readable.
        let tail = unsafe { std::slice::from_raw_parts(p.cast::<u8>().add(known), size - known) };
        if tail.iter().any(|b| *b != 0) {
            return Err(Failure::new(
                GranaryResult::GRANARY_ERROR_STRUCT_SIZE,
                format!(
                    "{function}: {} sets fields past the {known} bytes this granary knows (struct_size {size}: \
                     built against a newer granary.h?)",
                    T::NAME
                ),
            ));
        }
    }
    let mut value = T::default();
    // SAFETY: `min(size, known)` bytes are readable at `p` and writable at `value`; every bit
    // pattern C writes into the fields is valid (`Versioned`'s contract).
    unsafe {
        std::ptr::copy_nonoverlapping(p.cast::<u8>(), (&mut value as *mut T).cast::<u8>(), size.min(known));
    }
    Ok(value)
}

/// The struct at `p` as it should be, or its defaults when `p` is NULL (an optional options
/// struct).
///
/// # Safety
///
/// As [`read_in`].
pub unsafe fn read_optional<T: Versioned>(p: *const T, function: &str) -> Result<T, Failure> {
    if p.is_null() {
        return Ok(T::default());
    }
    // SAFETY: passed on from the caller.
    unsafe { read_in(p, function) }
}

/// Checks that the struct at `p` can take a `T` (non-NULL, `struct_size` large enough), so a
/// function can refuse before doing anything.
///
/// # Safety
///
/// `p` is NULL or points at `struct_size` writable bytes (at least 4).
pub unsafe fn check_out<T: Versioned>(p: *mut T, function: &str) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::null(function, T::NAME));
    }
    // SAFETY: the caller's promise: a struct whose first field is a u32.
    let size = unsafe { p.cast::<u32>().read_unaligned() } as usize;
    if size < T::V1_SIZE {
        return Err(size_error(function, T::NAME, size, T::V1_SIZE));
    }
    Ok(())
}

/// Writes `value` into the struct at `p` by its `struct_size` (the module's versioning rule).
///
/// # Safety
///
/// As [`check_out`].
pub unsafe fn write_out<T: Versioned>(p: *mut T, value: T, function: &str) -> Result<(), Failure> {
    // SAFETY: passed on.
    unsafe { check_out(p, function)? };
    // SAFETY: as in `check_out`.
    let size = unsafe { p.cast::<u32>().read_unaligned() } as usize;
    let known = std::mem::size_of::<T>();
    let filled = size.min(known);
    // SAFETY: `size` bytes at `p` are writable (the caller's promise); `filled <= size`, and
    // the zeroed tail lies within `size`.
    unsafe {
        std::ptr::copy_nonoverlapping((&value as *const T).cast::<u8>(), p.cast::<u8>(), filled);
        if size > known {
            std::ptr::write_bytes(p.cast::<u8>().add(known), 0, size - known);
        }
        p.cast::<u32>().write_unaligned(filled as u32);
    }
    Ok(())
}

/// The UTF-8 string at `p`, named `what` in messages.
///
/// # Safety
///
/// `p` is NULL or points at a NUL-terminated string that lives as long as `'a`.
pub unsafe fn str_in<'a>(p: *const c_char, function: &str, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::null(function, what));
    }
    // SAFETY: a NUL-terminated string (the caller's promise).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|e| Failure::invalid(format!("{function}: `{what}` is not UTF-8: {e}")))
}

/// `count` strings at `p` (NULL allowed when `count` is 0).
///
/// # Safety
///
/// `p` is NULL or points at `count` pointers, each as [`str_in`] requires.
pub unsafe fn strs_in<'a>(
    p: *const *const c_char,
    count: u32,
    function: &str,
    what: &str,
) -> Result<Vec<&'a str>, Failure> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Failure::invalid(format!("{function}: `{what}` is NULL but its count is {count}")));
    }
    // SAFETY: `count` readable pointers (the caller's promise).
    let ptrs = unsafe { std::slice::from_raw_parts(p, count as usize) };
    // SAFETY: each a string as `str_in` requires (the caller's promise).
    ptrs.iter().enumerate().map(|(i, s)| unsafe { str_in(*s, function, &format!("{what}[{i}]")) }).collect()
}

/// `len` bytes at `p` (NULL allowed when `len` is 0).
///
/// # Safety
///
/// `p` is NULL or points at `len` readable bytes that live as long as `'a`.
pub unsafe fn bytes_in<'a>(p: *const c_void, len: usize, function: &str, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure::invalid(format!("{function}: `{what}` is NULL but its size is {len}")));
    }
    // SAFETY: `len` readable bytes (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// The handle at `p`.
///
/// # Safety
///
/// `p` is NULL or a live handle of this type that granary returned and that is not destroyed
/// during `'a`.
pub unsafe fn handle<'a, T>(p: *const T, function: &str, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's promise.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(function, what))
}

/// An out pointer, checked for NULL before the work is done and written after.
pub struct Out<T> {
    p: *mut T,
}

impl<T> Out<T> {
    /// `p`, or the error naming `what` when it is NULL.
    pub fn new(p: *mut T, function: &str, what: &str) -> Result<Out<T>, Failure> {
        if p.is_null() {
            return Err(Failure::null(function, what));
        }
        Ok(Out { p })
    }

    /// Writes `value`.
    ///
    /// # Safety
    ///
    /// The pointer given to [`Out::new`] points at writable memory for a `T`.
    pub unsafe fn set(self, value: T) {
        // SAFETY: non-NULL (checked in `new`) and writable (the caller's promise).
        unsafe { self.p.write_unaligned(value) }
    }
}

/// Writes `value` to `p` when `p` is not NULL (an optional out parameter).
///
/// # Safety
///
/// `p` is NULL or points at writable memory for a `T`.
pub unsafe fn set_optional<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and writable (the caller's promise).
        unsafe { p.write_unaligned(value) }
    }
}

/// Copies `s` into `buf` (at most `capacity - 1` bytes and a NUL; nothing when `capacity`
/// is 0) and its full length, without the NUL, into `len` when not NULL.
///
/// # Safety
///
/// `buf` is NULL or points at `capacity` writable bytes; `len` is NULL or writable.
pub unsafe fn copy_str(
    s: &str,
    buf: *mut c_char,
    capacity: usize,
    len: *mut usize,
    function: &str,
) -> Result<(), Failure> {
    if buf.is_null() && capacity > 0 {
        return Err(Failure::invalid(format!("{function}: `buffer` is NULL but its capacity is {capacity}")));
    }
    if capacity > 0 {
        let n = s.len().min(capacity - 1);
        // SAFETY: `n + 1 <= capacity` bytes of `buf` are writable (the caller's promise).
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
    }
    // SAFETY: the caller's promise.
    unsafe { set_optional(len, s.len()) };
    Ok(())
}
