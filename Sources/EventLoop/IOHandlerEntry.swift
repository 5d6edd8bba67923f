import Posix

/// The loop's record of one ``IORegistration``: a class so that the dispatcher can hold it alive while its
/// handler runs, even if the handler deregisters itself.
final class IOHandlerEntry {
    let fileDescriptor: FileDescriptor
    var interest: IOEvents
    let handler: (IOEvents) -> Void

    init(fileDescriptor: FileDescriptor, interest: IOEvents, handler: @escaping (IOEvents) -> Void) {
        self.fileDescriptor = fileDescriptor
        self.interest = interest
        self.handler = handler
    }
}
