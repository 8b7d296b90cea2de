/// The kinds of simulated iPhone shipped in Config/iphone, compiled in (SwiftPM resources,
/// `.embedInCode`, through the links in Sources/Simulator/IPhoneFleet/iphone) so that `pushgate simulate`, `demo`
/// and `forecast` run outside the repository too.
public enum EmbeddedIPhones {
    public static let files: [String: String] = [
        "chat": String(decoding: PackageResources.chat_yaml, as: UTF8.self),
        "misbehaving": String(decoding: PackageResources.misbehaving_yaml, as: UTF8.self),
        "news": String(decoding: PackageResources.news_yaml, as: UTF8.self),
        "podcast": String(decoding: PackageResources.podcast_yaml, as: UTF8.self),
        "sports": String(decoding: PackageResources.sports_yaml, as: UTF8.self),
    ]
}
