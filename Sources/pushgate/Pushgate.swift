import ArgumentParser

@main
struct Pushgate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushgate",
        abstract: "An APNs-compatible push gateway that models how iOS throttles silent pushes.",
        subcommands: [
            ServeCommand.self, DemoCommand.self, BenchCommand.self, SimulateCommand.self, ForecastCommand.self,
            OriginCommand.self,
            SendCommand.self,
            KeysCommand.self, TokensCommand.self,
            CertsCommand.self,
            LookupCommand.self, DevicesCommand.self, ConfigCommand.self, FleetCommand.self,
        ],
        defaultSubcommand: ServeCommand.self)
}
