import PushModel

/// What WidgetKit shows for an app outside it and reloads on a push of its own: a Home Screen widget
/// (`apns-push-type: widgets`, `WidgetPushHandler`, iOS 26) or a control (`controls`,
/// `ControlPushHandler`, iOS 18: Control Center, the Lock Screen's two buttons, the Action button).
/// Neither wakes the app; each is seen whenever the screen comes on (the Lock Screen shows them).
public enum WidgetKitSurface: String, Sendable, CaseIterable, Codable {
    case widget, control

    /// The push type that reloads it.
    public var pushType: PushType {
        switch self {
        case .widget: .widgets
        case .control: .controls
        }
    }

    /// The first iOS that reloads it on a push (`WidgetPushHandler` is iOS 26's, `ControlPushHandler`
    /// iOS 18's): an older iPhone has no token for it, so a push for it reloads nothing.
    public var since: Int {
        switch self {
        case .widget: 26
        case .control: 18
        }
    }

    /// Its place in `allCases` (tables kept per surface).
    public var index: Int {
        switch self {
        case .widget: 0
        case .control: 1
        }
    }

    /// The surface a push of `type` reloads (nil: not a WidgetKit push).
    public init?(_ type: PushType) {
        guard let surface = Self.allCases.first(where: { $0.pushType == type }) else { return nil }
        self = surface
    }
}

extension WidgetKitSurface {
    /// The version each surface of an app shows (nil: none yet, or the app has none), kept in place.
    public struct Shown: Sendable, Equatable {
        public var widget: Int?
        public var control: Int?

        public subscript(surface: WidgetKitSurface) -> Int? {
            get {
                switch surface {
                case .widget: widget
                case .control: control
                }
            }
            set {
                switch surface {
                case .widget: widget = newValue
                case .control: control = newValue
                }
            }
        }
    }
}

/// A set of surfaces in one byte: an app's behaviour is copied on the runtime's hot path, and a `Set`
/// there would be a reference counted at every copy and a string hashed at every look.
public struct WidgetKitSurfaces: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let widget = WidgetKitSurfaces(.widget)
    public static let control = WidgetKitSurfaces(.control)

    public init(_ surface: WidgetKitSurface) { rawValue = 1 << UInt8(surface.index) }

    public func contains(_ surface: WidgetKitSurface) -> Bool { contains(WidgetKitSurfaces(surface)) }

    /// Its surfaces, in `WidgetKitSurface.allCases`' order.
    public var members: [WidgetKitSurface] { WidgetKitSurface.allCases.filter(contains) }
}
