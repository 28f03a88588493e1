//! The producer's own count of what it made and what came back to it, so
//! that a test can see every buffer and owner released exactly once.
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static BUFFERS_MADE: AtomicU64 = AtomicU64::new(0);
static BUFFERS_RELEASED: AtomicU64 = AtomicU64::new(0);
static OWNERS_MADE: AtomicU64 = AtomicU64::new(0);
static OWNERS_RELEASED: AtomicU64 = AtomicU64::new(0);
static BAD_RELEASES: AtomicU64 = AtomicU64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Ids made and not yet released: a release of any other id is a bad one.
static LIVE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

#[derive(Clone, Copy)]
enum Kind {
    Buffer,
    Owner,
}

/// An id that counts its release when dropped.
struct Ticket {
    id: u64,
    kind: Kind,
}

impl Ticket {
    fn new(kind: Kind) -> Ticket {
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        match kind {
            Kind::Buffer => BUFFERS_MADE.fetch_add(1, Ordering::SeqCst),
            Kind::Owner => OWNERS_MADE.fetch_add(1, Ordering::SeqCst),
        };
        Ticket { id, kind }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !LIVE.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id) {
            BAD_RELEASES.fetch_add(1, Ordering::SeqCst); // twice, or never made
            return;
        }
        match self.kind {
            Kind::Buffer => BUFFERS_RELEASED.fetch_add(1, Ordering::SeqCst),
            Kind::Owner => OWNERS_RELEASED.fetch_add(1, Ordering::SeqCst),
        };
    }
}

/// The bytes of one buffer, owned by the buffer that lends them.
pub struct CountedBytes {
    bytes: Vec<u8>,
    _ticket: Ticket,
}

impl CountedBytes {
    pub fn new(bytes: Vec<u8>) -> CountedBytes {
        CountedBytes { bytes, _ticket: Ticket::new(Kind::Buffer) }
    }
}

impl AsMut<[u8]> for CountedBytes {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// What a context owns for the producer: released when the context is destroyed.
pub struct CountedOwner {
    _ticket: Ticket,
}

impl CountedOwner {
    pub fn new() -> CountedOwner {
        CountedOwner { _ticket: Ticket::new(Kind::Owner) }
    }
}

/// buffers_made, buffers_released, owners_made, owners_released, bad_releases.
pub fn snapshot() -> [u64; 5] {
    [&BUFFERS_MADE, &BUFFERS_RELEASED, &OWNERS_MADE, &OWNERS_RELEASED, &BAD_RELEASES].map(|c| c.load(Ordering::SeqCst))
}
