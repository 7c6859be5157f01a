import Foundation

/// The lease operations of one store transaction (the `leases` table of either store).
package protocol LeaseTransaction {
    /// Takes the lease when it is free, expired at `now` or already held by `owner` (which renews it).
    func acquireLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool
    /// Extends the lease to `now + ttl` when `owner` still holds it (nobody took it over, even if it expired).
    func renewLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool
    /// Gives the lease up when `owner` holds it; otherwise does nothing.
    func releaseLease(_ name: String, owner: String) throws
    /// The owner of an unexpired lease at `now`, or nil.
    func leaseOwner(_ name: String, now: Date) throws -> String?
}

/// A lease store whose lease operations each run in one transaction of its own, on the calling thread.
package protocol TransactionalLeaseStore: LeaseStore {
    /// Runs `body` in one transaction (a read snapshot when `isReadOnly`) on the calling thread.
    func leaseTransaction<T>(isReadOnly: Bool, _ body: (any LeaseTransaction) throws -> T) throws -> T
}

extension TransactionalLeaseStore {
    /// Takes the lease `name` for `owner` until `now + ttl` when it is free, expired or already `owner`'s (which
    /// renews it); returns whether `owner` holds it now.
    public func acquireLeaseBlocking(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try leaseTransaction(isReadOnly: false) { try $0.acquireLease(name, owner: owner, ttl: ttl, now: now) }
    }

    /// Extends `owner`'s lease to `now + ttl`; false when someone else took it over or it was released.
    public func renewLeaseBlocking(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try leaseTransaction(isReadOnly: false) { try $0.renewLease(name, owner: owner, ttl: ttl, now: now) }
    }

    /// Gives up `owner`'s lease; does nothing when `owner` does not hold it.
    public func releaseLeaseBlocking(_ name: String, owner: String) throws {
        try leaseTransaction(isReadOnly: false) { try $0.releaseLease(name, owner: owner) }
    }

    /// The owner of the lease at `now`, or nil when it is free or expired.
    public func leaseOwnerBlocking(_ name: String, now: Date) throws -> String? {
        try leaseTransaction(isReadOnly: true) { try $0.leaseOwner(name, now: now) }
    }
}
