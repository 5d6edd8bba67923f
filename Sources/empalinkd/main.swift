#if canImport(Glibc)
import Glibc
#endif
import Agent

exit(DaemonCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
