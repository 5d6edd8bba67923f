#if canImport(Glibc)
import Glibc
#endif
import Simulator

exit(SimulatorCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
