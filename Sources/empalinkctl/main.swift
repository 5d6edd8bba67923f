#if canImport(Glibc)
import Glibc
#endif
import EmpaLinkCtl

exit(EmpaLinkCtl.main(arguments: Array(CommandLine.arguments.dropFirst())))
