/// Why a device did not wake an app for a silent push it received (the device protocol's `not_woken`
/// reason): the app was force-quit, the device was in Low Power Mode or had Background App Refresh off
/// (conditions the gateway had not heard of yet), or the device's iOS has no silent notifications
/// (before iOS 7, 002). The policy then forgets the wake without a penalty: the app never ran, so it
/// could not miss its deadline.
public enum WakeRefusal: String, Sendable, Codable, CaseIterable {
    case forceQuit = "force_quit"
    case lowPowerMode = "low_power_mode"
    case backgroundAppRefreshOff = "background_app_refresh_off"
    case noSilentPushes = "no_silent_pushes"
}
