/// The kinds of simulated iPhone shipped in Config/iphone, embedded so `pushgate simulate` and `demo` run
/// outside the repository too. Each is its file's text, indented (a test keeps the two byte for byte
/// equal: edit both).
enum EmbeddedIPhones {
    static let files: [String: String] = [
        "news": """
            # A news app on iOS 17. Its backend announces each new edition with a silent push (content-available,
            # priority 5); the app also asks for background fetch at the system's minimum interval. On a wake it
            # reads the manifest and downloads the edition (about 200 KB) in a background session. Its users read it
            # at breakfast, lunch, after work and in bed, and a few times besides; one visit in ten ends with a
            # swipe-away; each phone spends two hours a day in Low Power Mode, and one in ten has Background App
            # Refresh off: the cases where a silent push cannot help. For local news it monitors significant location
            # changes, six a day, each of which wakes it for 10 s (R8).
            ios: 17
            apps:
              - bundle_id: com.example.news
                announce: silent            # none | silent | alert | silent_and_alert
                fetch: minimum              # never | minimum | seconds
                background_download: true   # the edition in a background session (R9)
                work_ms: 800                # parsing and indexing after the manifest arrives
                did_enter_background_ms: 80
                forgets_completion: 0.01
                forgets_ending_task: 0.01
                forgets_session_handler: 0.01
                moves_download_to_background_session: true
                monitors_location: true     # significant location changes wake it (R8)
            users:
              habit_hours: [7.5, 12.5, 18, 22]
              habit_shift_hours: 1
              habit_jitter_minutes: 20
              extra_opens_per_day: 3
              session_seconds: 120
              force_quit_share: 0.1
              low_power_hours_per_day: 2
              refresh_off_share: 0.1
              alert_open_share: 0.1       # of alerts seen while not using an app, opened for
              alert_open_seconds: 300     # mean time from the alert to that open
              location_changes_per_day: 6 # the user moving about; each wakes the apps that monitor them

            """,
        "chat": """
            # A chat app on iOS 17. Its backend sends an alert for each new message and no silent push; it never asks
            # for background fetch. Content (the conversation list) is small and is fetched in the foreground when the
            # user opens the app: often and briefly, and for two alerts in five. This is the baseline a silent-push
            # strategy is measured against: the app is fresh at open only because it refreshes on open.
            ios: 17
            apps:
              - bundle_id: com.example.chat
                announce: alert
                fetch: never
                background_download: false
                work_ms: 150
                did_enter_background_ms: 30
                forgets_completion: 0
                forgets_ending_task: 0
                forgets_session_handler: 0
                moves_download_to_background_session: false
            users:
              habit_hours: [8, 10, 12.5, 15, 18, 20.5, 22.5]
              habit_shift_hours: 1.5
              habit_jitter_minutes: 30
              extra_opens_per_day: 25
              session_seconds: 45
              force_quit_share: 0.03
              low_power_hours_per_day: 1
              refresh_off_share: 0.05
              alert_open_share: 0.4       # of alerts seen while not using an app, opened for
              alert_open_seconds: 90      # mean time from the alert to that open

            """,
        "podcast": """
            # A podcast app on iOS 13. A new episode (8 MB here) is announced with a silent push; the app downloads it
            # in a background session, which the system treats as discretionary (later and slower, R9) because it
            # starts while the app is in the background, and which outlives a system termination (R10). It also
            # fetches every hour. Its users listen on the commute, for long sessions, and swipe the app away more
            # than most.
            ios: 13
            apps:
              - bundle_id: com.example.podcast
                announce: silent
                fetch: 3600
                background_download: true
                item_bytes: 8000000
                work_ms: 400
                did_enter_background_ms: 100
                forgets_completion: 0.02
                forgets_ending_task: 0.02
                forgets_session_handler: 0.02
                moves_download_to_background_session: true
            users:
              habit_hours: [8, 17.5]
              habit_shift_hours: 1
              habit_jitter_minutes: 25
              extra_opens_per_day: 1
              session_seconds: 1800
              force_quit_share: 0.2
              low_power_hours_per_day: 0
              refresh_off_share: 0.05
              alert_open_share: 0.15      # of alerts seen while not using an app, opened for
              alert_open_seconds: 600     # mean time from the alert to that open

            """,
        "misbehaving": """
            # An app that breaks the rules, on iOS 7 (a 180 s background-task allowance): its backend sends both a
            # silent push and an alert for every version; the app often forgets to call its completion handlers and
            # to end its background tasks, and its DidEnterBackground takes 5.2 s, past the 5 s watchdog (R5). Expect
            # terminations of every cause, wasted wakes, and content no fresher for all the pushes.
            ios: 7
            apps:
              - bundle_id: com.example.misbehaving
                announce: silent_and_alert
                fetch: minimum
                background_download: false  # downloads inside the wake, so a slow item overruns the 30 s
                work_ms: 20000
                did_enter_background_ms: 5200
                forgets_completion: 0.25
                forgets_ending_task: 0.4
                forgets_session_handler: 0.25
                moves_download_to_background_session: false
            users:
              habit_hours: [9, 13, 20]
              habit_shift_hours: 2
              habit_jitter_minutes: 45
              extra_opens_per_day: 4
              session_seconds: 60
              force_quit_share: 0.3
              low_power_hours_per_day: 3
              refresh_off_share: 0.2
              alert_open_share: 0.05      # of alerts seen while not using an app, opened for
              alert_open_seconds: 300     # mean time from the alert to that open

            """,
    ]
}
