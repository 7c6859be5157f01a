import CCurl

/// The C callbacks curl calls on the curl thread; each finds its `CurlTransfer` through the user pointer.
///
/// Written as static members of a nonisolated type: a closure isolated to an actor would trap when C calls it.
enum CurlCallbacks {
    /// CURLOPT_WRITEFUNCTION: body bytes; 0 (curl aborts with CURLE_WRITE_ERROR) once the body passes its limit.
    static let write: curl_write_callback = { data, size, count, context in
        guard let context else { return 0 }
        let length = size * count
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        if transfer.bodyExceedsLimit(adding: length) { return 0 }
        return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : CCURL_WRITEFUNC_PAUSE
    }

    /// CURLOPT_HEADERFUNCTION: one header line, CRLF included.
    static let header: curl_write_callback = { data, size, count, context in
        guard let context else { return 0 }
        let length = size * count
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
        return length
    }

    /// CURLOPT_READFUNCTION: the next part of the request body.
    static let read: curl_read_callback = { buffer, size, count, context in
        guard let context, let buffer else { return CCURL_READFUNC_ABORT }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.readBody(into: UnsafeMutableRawPointer(buffer), capacity: size * count)
    }

    /// CURLOPT_SEEKFUNCTION: rewind the request body.
    static let seek: curl_seek_callback = { context, offset, origin in
        guard let context, origin == SEEK_SET else { return CCURL_SEEKFUNC_CANTSEEK }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.seekBody(to: offset) ? CCURL_SEEKFUNC_OK : CCURL_SEEKFUNC_CANTSEEK
    }

    /// CURLOPT_XFERINFOFUNCTION: upload progress; never aborts (cancellation removes the handle instead).
    static let transferInfo: curl_xferinfo_callback = { context, _, _, _, uploaded in
        guard let context else { return 0 }
        Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().reportUpload(sent: uploaded)
        return 0
    }
}
