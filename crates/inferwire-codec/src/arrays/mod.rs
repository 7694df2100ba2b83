//! Self-describing array encodings that carry one numpy array and nothing else: `.npy`,
//! msgpack-numpy and the two JSON layouts numpy RPC clients use. They share numpy's
//! type strings (`descr`).
pub mod descr;
pub mod json;
pub mod msgpack;
pub mod npy;
