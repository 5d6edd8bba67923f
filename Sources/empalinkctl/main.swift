#if canImport(Glibc)
import Glibc
#endif
import CtlCommands

exit(EmpaLinkCtl.main(arguments: Array(CommandLine.arguments.dropFirst())))
