// The table's languages: English, Japanese, Italian, French, Russian and German (the rule
// sheets' languages). One catalogue per language; numbers, money and dates go through Intl.
// The language is the player's choice (remembered per player in this browser), else the
// browser's first supported language, else English.

export const LANGS = { en: "English", ja: "日本語", it: "Italiano", fr: "Français", ru: "Русский", de: "Deutsch" };

const C = {
  en: {
    skip: "Skip to the game buttons", nav_table: "Table", nav_history: "History", nav_rules: "Rules", signout: "Sign out",
    signout_all: "Sign out everywhere", session_ended: "Your session has ended (unused too long, or signed out everywhere). Sign in again; your open round is kept.", signing_up: "Your name is registered if it was free: signing in…",
    language: "Language", signed_in: "Signed in as {name}",
    login_title: "Sign in to play", login_intro: "A new player starts with a demo balance. The PIN confirms changes to your limits.",
    name: "Name", pin: "PIN", signin: "Sign in", new_player: "New player",
    pays: "Pays", three_kind_row: "Three of a kind", spread_row: "Spread {a}", spread_rows: "Spread {a}–{b}", consecutive_row: "Consecutive",
    push_word: "push", to_one: "{n} to 1",
    add_seat: "Add a seat", remove_seat: "Remove seat", seat: "Seat {n}", raise_seat: "Raise seat {n}", stand_seat: "Stand seat {n}",
    deal: "Deal", raise: "Raise", stand: "Stand", clear: "Clear bet", repeat: "Repeat bet",
    player: "Player", balance: "Balance", bet: "Bet", limits: "Limits", last_bet: "Last bet",
    fairness: "Fairness", next_round: "Next round", commitment: "Commitment", nonce: "Nonce", round: "Round", table_decks: "Table · decks",
    rules_digest: "Rules digest", fair_summary: "Sealed before you bet: the cards are fixed by commitment {c}, for the rules {r}. Open for the details.", fair_summary_norules: "Sealed before you bet: the cards are fixed by commitment {c}. Open for the details.", fair_none: "No round is waiting for a bet.",
    client_seed: "Your client seed", new_seed: "New random seed", last_round: "Last round", checks: "Checks and reveal",
    my_limits: "My limits", options: "Options", sound: "Sound", voice: "Voice", animation: "Animation",
    place_bet: "Place your bet.", raise_or_stand: "{hand}: raise or stand?",
    pair: "Pair", consecutive: "Consecutive", spread: "Spread {n}", marker: "Red dog: spread {n} — pays {odds} to 1",
    win: "You win: {returned} returned on {stake} ({why}, {odds} to 1)", push: "Push: {returned} returned ({why})",
    lose: "You lose {stake} ({why})", voided: "Round voided: bet of {bet} refunded",
    r_three_of_a_kind: "three of a kind", r_pair_no_match: "pair, no match", r_consecutive: "consecutive cards",
    r_third_card_between: "third card between", r_third_card_matches: "third card matches", r_third_card_outside: "third card outside",
    verifying: "Verifying in your browser…",
    signature_ok: "The engine's signature on the reveal checks out too.",
    verified: "✔ Verified in your browser: the engine's reveal and this screen agree — {fields}.",
    not_verified: "✘ Not verified: {wrong}.", reveal_ok: " The reveal itself checks out{rest}.", and_so_do: ", and so do {fields}",
    mismatch: "{field} shown here ({shown}) is not what the reveal says ({expected})",
    f_cards: "the cards on the table", f_hand: "the hand (pair, consecutive or spread)", f_seats: "the number of seats", f_bet: "the bet",
    f_decision: "the raise or stand", f_stake: "the stake", f_outcome: "the outcome", f_returned: "the amount credited",
    f_balance: "the balance change", f_transcripts: "the round's transcript", f_commitment: "the commitment shown before the deal",
    f_rules_digest: "the rules shown with the commitment", f_seat: "seat {n}: {what}",
    ranks: ["Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Jack", "Queen", "King", "Ace"],
    suits: { c: "clubs", d: "diamonds", h: "hearts", s: "spades" }, card: "{rank} of {suit}",
    no_card: "no card", face_down: "face-down card",
  },
  ja: {
    skip: "ゲームボタンへ移動", nav_table: "テーブル", nav_history: "履歴", nav_rules: "ルール", signout: "サインアウト",
    signout_all: "すべての端末でサインアウト", session_ended: "セッションが終了しました（一定時間操作がなかったか、すべての端末でサインアウトしました）。もう一度サインインしてください。進行中のラウンドは保持されています。", signing_up: "名前が未使用なら登録されました。サインインしています…",
    language: "言語", signed_in: "{name} でサインイン中",
    login_title: "サインインしてプレー", login_intro: "新しいプレーヤーにはデモ用の残高が用意されます。PIN は賭け金限度額の変更の確認に使います。",
    name: "名前", pin: "PIN", signin: "サインイン", new_player: "新規プレーヤー",
    pays: "払い戻し", three_kind_row: "スリーカード", spread_row: "スプレッド {a}", spread_rows: "スプレッド {a}–{b}", consecutive_row: "コンセクティブ",
    push_word: "プッシュ", to_one: "{n} 対 1",
    add_seat: "シートを追加", remove_seat: "シートを外す", seat: "シート {n}", raise_seat: "シート {n} レイズ", stand_seat: "シート {n} スタンド",
    deal: "ディール", raise: "レイズ", stand: "スタンド", clear: "賭けを取り除く", repeat: "前回と同じ賭け",
    player: "プレーヤー情報", balance: "残高", bet: "賭け金", limits: "限度額", last_bet: "前回の賭け",
    fairness: "公正性", next_round: "次のラウンド", commitment: "コミットメント", nonce: "ノンス", round: "ラウンド", table_decks: "テーブル · デッキ数",
    rules_digest: "ルールのダイジェスト", fair_summary: "賭ける前に封印済み：カードはコミットメント {c} で確定し、ルール {r} に従います。詳細は開いてください。", fair_summary_norules: "賭ける前に封印済み：カードはコミットメント {c} で確定しています。詳細は開いてください。", fair_none: "賭けを待っているラウンドはありません。",
    client_seed: "あなたのクライアントシード", new_seed: "新しいランダムシード", last_round: "前のラウンド", checks: "検証内容と公開データ",
    my_limits: "賭け金限度額", options: "オプション", sound: "音", voice: "音声", animation: "アニメーション",
    place_bet: "賭けを置いてください。", raise_or_stand: "{hand}：レイズしますか、スタンドしますか？",
    pair: "ペア", consecutive: "コンセクティブ", spread: "スプレッド {n}", marker: "レッドドッグ：スプレッド {n} — {odds} 対 1",
    win: "勝ち：賭け金 {stake} に対して {returned} の払い戻し（{why}、{odds} 対 1）", push: "プッシュ：{returned} を返金（{why}）",
    lose: "負け：{stake}（{why}）", voided: "ラウンド無効：賭け金 {bet} を返金",
    r_three_of_a_kind: "スリーカード", r_pair_no_match: "ペア、一致せず", r_consecutive: "連続する数字",
    r_third_card_between: "3枚目が間に入った", r_third_card_matches: "3枚目が同じ数字", r_third_card_outside: "3枚目が外側",
    verifying: "ブラウザで検証中…",
    signature_ok: "公開データに対するエンジンの署名も確認できました。",
    verified: "✔ ブラウザで検証済み：エンジンの公開データとこの画面が一致 — {fields}。",
    not_verified: "✘ 検証できません：{wrong}。", reveal_ok: " 公開データ自体は正しいです{rest}。", and_so_do: "（{fields} も一致）",
    mismatch: "この画面の{field}（{shown}）が公開データ（{expected}）と異なります",
    f_cards: "テーブルのカード", f_hand: "手（ペア、コンセクティブ、スプレッド）", f_seats: "シート数", f_bet: "賭け金",
    f_decision: "レイズ／スタンド", f_stake: "賭け金合計", f_outcome: "結果", f_returned: "払い戻し額",
    f_balance: "残高の変化", f_transcripts: "ラウンドのトランスクリプト", f_commitment: "ディール前に表示されたコミットメント",
    f_rules_digest: "コミットメントと共に表示されたルール", f_seat: "シート {n}：{what}",
    ranks: ["2", "3", "4", "5", "6", "7", "8", "9", "10", "ジャック", "クイーン", "キング", "エース"],
    suits: { c: "クラブ", d: "ダイヤ", h: "ハート", s: "スペード" }, card: "{suit}の{rank}",
    no_card: "カードなし", face_down: "裏向きのカード",
  },
  it: {
    skip: "Vai ai pulsanti di gioco", nav_table: "Tavolo", nav_history: "Storico", nav_rules: "Regole", signout: "Esci",
    signout_all: "Esci ovunque", session_ended: "La sessione è terminata (inutilizzata troppo a lungo, o uscita ovunque). Accedi di nuovo; la mano aperta è conservata.", signing_up: "Il nome è registrato se era libero: accesso in corso…",
    language: "Lingua", signed_in: "Connesso come {name}",
    login_title: "Accedi per giocare", login_intro: "Un nuovo giocatore parte con un saldo dimostrativo. Il PIN conferma le modifiche ai tuoi limiti.",
    name: "Nome", pin: "PIN", signin: "Accedi", new_player: "Nuovo giocatore",
    pays: "Vincite", three_kind_row: "Tris", spread_row: "Scarto {a}", spread_rows: "Scarto {a}–{b}", consecutive_row: "Consecutive",
    push_word: "pareggio", to_one: "{n} a 1",
    add_seat: "Aggiungi un posto", remove_seat: "Togli il posto", seat: "Posto {n}", raise_seat: "Rilancia posto {n}", stand_seat: "Stai posto {n}",
    deal: "Distribuisci", raise: "Rilancia", stand: "Stai", clear: "Togli puntata", repeat: "Ripeti puntata",
    player: "Giocatore", balance: "Saldo", bet: "Puntata", limits: "Limiti", last_bet: "Ultima puntata",
    fairness: "Equità", next_round: "Prossima mano", commitment: "Impegno", nonce: "Nonce", round: "Mano", table_decks: "Tavolo · mazzi",
    rules_digest: "Impronta delle regole", fair_summary: "Sigillato prima della puntata: le carte sono fissate dall'impegno {c}, per le regole {r}. Apri per i dettagli.", fair_summary_norules: "Sigillato prima della puntata: le carte sono fissate dall'impegno {c}. Apri per i dettagli.", fair_none: "Nessuna mano in attesa di puntata.",
    client_seed: "Il tuo seme client", new_seed: "Nuovo seme casuale", last_round: "Ultima mano", checks: "Controlli e rivelazione",
    my_limits: "I miei limiti", options: "Opzioni", sound: "Suono", voice: "Voce", animation: "Animazione",
    place_bet: "Fai la tua puntata.", raise_or_stand: "{hand}: rilanci o stai?",
    pair: "Coppia", consecutive: "Consecutive", spread: "Scarto {n}", marker: "Red dog: scarto {n} — paga {odds} a 1",
    win: "Vinci: {returned} restituiti su {stake} ({why}, {odds} a 1)", push: "Pareggio: {returned} restituiti ({why})",
    lose: "Perdi {stake} ({why})", voided: "Mano annullata: puntata di {bet} rimborsata",
    r_three_of_a_kind: "tris", r_pair_no_match: "coppia senza tris", r_consecutive: "carte consecutive",
    r_third_card_between: "terza carta compresa", r_third_card_matches: "terza carta uguale", r_third_card_outside: "terza carta fuori",
    verifying: "Verifica nel tuo browser…",
    signature_ok: "Anche la firma del motore sulla rivelazione è valida.",
    verified: "✔ Verificato nel tuo browser: la rivelazione del motore e questa schermata concordano — {fields}.",
    not_verified: "✘ Non verificato: {wrong}.", reveal_ok: " La rivelazione in sé è corretta{rest}.", and_so_do: ", e anche {fields}",
    mismatch: "{field} mostrato qui ({shown}) non è ciò che dice la rivelazione ({expected})",
    f_cards: "le carte sul tavolo", f_hand: "la mano (coppia, consecutive o scarto)", f_seats: "il numero di posti", f_bet: "la puntata",
    f_decision: "il rilancio o stai", f_stake: "la posta", f_outcome: "l'esito", f_returned: "l'importo accreditato",
    f_balance: "la variazione del saldo", f_transcripts: "la trascrizione della mano", f_commitment: "l'impegno mostrato prima della distribuzione",
    f_rules_digest: "le regole mostrate con l'impegno", f_seat: "posto {n}: {what}",
    ranks: ["Due", "Tre", "Quattro", "Cinque", "Sei", "Sette", "Otto", "Nove", "Dieci", "Fante", "Regina", "Re", "Asso"],
    suits: { c: "fiori", d: "quadri", h: "cuori", s: "picche" }, card: "{rank} di {suit}",
    no_card: "nessuna carta", face_down: "carta coperta",
  },
  fr: {
    skip: "Aller aux boutons du jeu", nav_table: "Table", nav_history: "Historique", nav_rules: "Règles", signout: "Se déconnecter",
    signout_all: "Se déconnecter partout", session_ended: "Votre session a pris fin (inutilisée trop longtemps, ou déconnexion partout). Reconnectez-vous ; votre manche en cours est conservée.", signing_up: "Votre nom est enregistré s’il était libre : connexion…",
    language: "Langue", signed_in: "Connecté : {name}",
    login_title: "Connectez-vous pour jouer", login_intro: "Un nouveau joueur commence avec un solde de démonstration. Le code PIN confirme les changements de vos limites.",
    name: "Nom", pin: "Code PIN", signin: "Se connecter", new_player: "Nouveau joueur",
    pays: "Gains", three_kind_row: "Brelan", spread_row: "Écart {a}", spread_rows: "Écart {a}–{b}", consecutive_row: "Consécutives",
    push_word: "égalité", to_one: "{n} contre 1",
    add_seat: "Ajouter une place", remove_seat: "Retirer la place", seat: "Place {n}", raise_seat: "Relancer place {n}", stand_seat: "Rester place {n}",
    deal: "Distribuer", raise: "Relancer", stand: "Rester", clear: "Retirer la mise", repeat: "Répéter la mise",
    player: "Joueur", balance: "Solde", bet: "Mise", limits: "Limites", last_bet: "Dernière mise",
    fairness: "Équité", next_round: "Prochaine donne", commitment: "Engagement", nonce: "Nonce", round: "Donne", table_decks: "Table · jeux",
    rules_digest: "Empreinte des règles", fair_summary: "Scellé avant votre mise : les cartes sont fixées par l’engagement {c}, pour les règles {r}. Ouvrez pour le détail.", fair_summary_norules: "Scellé avant votre mise : les cartes sont fixées par l’engagement {c}. Ouvrez pour le détail.", fair_none: "Aucune donne n’attend de mise.",
    client_seed: "Votre graine client", new_seed: "Nouvelle graine aléatoire", last_round: "Dernière donne", checks: "Vérifications et révélation",
    my_limits: "Mes limites", options: "Options", sound: "Son", voice: "Voix", animation: "Animation",
    place_bet: "Placez votre mise.", raise_or_stand: "{hand} : relancer ou rester ?",
    pair: "Paire", consecutive: "Consécutives", spread: "Écart {n}", marker: "Red dog : écart {n} — paie {odds} contre 1",
    win: "Gagné : {returned} rendus sur {stake} ({why}, {odds} contre 1)", push: "Égalité : {returned} rendus ({why})",
    lose: "Perdu : {stake} ({why})", voided: "Donne annulée : mise de {bet} remboursée",
    r_three_of_a_kind: "brelan", r_pair_no_match: "paire sans brelan", r_consecutive: "cartes consécutives",
    r_third_card_between: "troisième carte entre les deux", r_third_card_matches: "troisième carte égale", r_third_card_outside: "troisième carte en dehors",
    verifying: "Vérification dans votre navigateur…",
    signature_ok: "La signature du moteur sur la révélation est valide elle aussi.",
    verified: "✔ Vérifié dans votre navigateur : la révélation du moteur et cet écran concordent — {fields}.",
    not_verified: "✘ Non vérifié : {wrong}.", reveal_ok: " La révélation elle-même est correcte{rest}.", and_so_do: ", ainsi que {fields}",
    mismatch: "{field} affiché ici ({shown}) n'est pas ce que dit la révélation ({expected})",
    f_cards: "les cartes sur la table", f_hand: "la main (paire, consécutives ou écart)", f_seats: "le nombre de places", f_bet: "la mise",
    f_decision: "la relance ou non", f_stake: "l'enjeu", f_outcome: "le résultat", f_returned: "le montant crédité",
    f_balance: "la variation du solde", f_transcripts: "la transcription de la donne", f_commitment: "l'engagement affiché avant la donne",
    f_rules_digest: "les règles affichées avec l'engagement", f_seat: "place {n} : {what}",
    ranks: ["Deux", "Trois", "Quatre", "Cinq", "Six", "Sept", "Huit", "Neuf", "Dix", "Valet", "Dame", "Roi", "As"],
    suits: { c: "trèfle", d: "carreau", h: "cœur", s: "pique" }, card: "{rank} de {suit}",
    no_card: "pas de carte", face_down: "carte face cachée",
  },
  ru: {
    skip: "К кнопкам игры", nav_table: "Стол", nav_history: "История", nav_rules: "Правила", signout: "Выйти",
    signout_all: "Выйти на всех устройствах", session_ended: "Сеанс завершён (слишком долго не использовался или выполнен выход на всех устройствах). Войдите снова; открытый раунд сохранён.", signing_up: "Имя зарегистрировано, если оно было свободно: выполняется вход…",
    language: "Язык", signed_in: "Вы вошли как {name}",
    login_title: "Войдите, чтобы играть", login_intro: "Новый игрок начинает с демонстрационным балансом. PIN подтверждает изменение ваших лимитов.",
    name: "Имя", pin: "PIN", signin: "Войти", new_player: "Новый игрок",
    pays: "Выплаты", three_kind_row: "Тройка", spread_row: "Спред {a}", spread_rows: "Спред {a}–{b}", consecutive_row: "Соседние",
    push_word: "ничья", to_one: "{n} к 1",
    add_seat: "Добавить место", remove_seat: "Убрать место", seat: "Место {n}", raise_seat: "Повысить место {n}", stand_seat: "Остаться место {n}",
    deal: "Раздать", raise: "Повысить", stand: "Остаться", clear: "Убрать ставку", repeat: "Повторить ставку",
    player: "Игрок", balance: "Баланс", bet: "Ставка", limits: "Лимиты", last_bet: "Последняя ставка",
    fairness: "Честность", next_round: "Следующий раунд", commitment: "Обязательство", nonce: "Нонс", round: "Раунд", table_decks: "Стол · колоды",
    rules_digest: "Дайджест правил", fair_summary: "Запечатано до ставки: карты определены обязательством {c} по правилам {r}. Откройте, чтобы увидеть подробности.", fair_summary_norules: "Запечатано до ставки: карты определены обязательством {c}. Откройте, чтобы увидеть подробности.", fair_none: "Нет раунда, ожидающего ставки.",
    client_seed: "Ваше клиентское зерно", new_seed: "Новое случайное зерно", last_round: "Последний раунд", checks: "Проверки и раскрытие",
    my_limits: "Мои лимиты", options: "Настройки", sound: "Звук", voice: "Голос", animation: "Анимация",
    place_bet: "Сделайте ставку.", raise_or_stand: "{hand}: повысить или остаться?",
    pair: "Пара", consecutive: "Соседние карты", spread: "Спред {n}", marker: "Red dog: спред {n} — платит {odds} к 1",
    win: "Выигрыш: {returned} возвращено на {stake} ({why}, {odds} к 1)", push: "Ничья: {returned} возвращено ({why})",
    lose: "Проигрыш {stake} ({why})", voided: "Раунд отменён: ставка {bet} возвращена",
    r_three_of_a_kind: "тройка", r_pair_no_match: "пара без совпадения", r_consecutive: "соседние карты",
    r_third_card_between: "третья карта между", r_third_card_matches: "третья карта совпала", r_third_card_outside: "третья карта вне",
    verifying: "Проверка в вашем браузере…",
    signature_ok: "Подпись движка под раскрытием тоже верна.",
    verified: "✔ Проверено в вашем браузере: раскрытие движка и этот экран совпадают — {fields}.",
    not_verified: "✘ Не проверено: {wrong}.", reveal_ok: " Само раскрытие верно{rest}.", and_so_do: ", как и {fields}",
    mismatch: "{field} на экране ({shown}) не совпадает с раскрытием ({expected})",
    f_cards: "карты на столе", f_hand: "рука (пара, соседние или спред)", f_seats: "число мест", f_bet: "ставка",
    f_decision: "повышение или отказ", f_stake: "сумма ставки", f_outcome: "исход", f_returned: "зачисленная сумма",
    f_balance: "изменение баланса", f_transcripts: "транскрипт раунда", f_commitment: "обязательство, показанное до раздачи",
    f_rules_digest: "правила, показанные с обязательством", f_seat: "место {n}: {what}",
    ranks: ["Двойка", "Тройка", "Четвёрка", "Пятёрка", "Шестёрка", "Семёрка", "Восьмёрка", "Девятка", "Десятка", "Валет", "Дама", "Король", "Туз"],
    suits: { c: "трефы", d: "бубны", h: "червы", s: "пики" }, card: "{rank}, {suit}",
    no_card: "нет карты", face_down: "карта рубашкой вверх",
  },
  de: {
    skip: "Zu den Spielknöpfen", nav_table: "Tisch", nav_history: "Verlauf", nav_rules: "Regeln", signout: "Abmelden",
    signout_all: "Überall abmelden", session_ended: "Ihre Sitzung ist beendet (zu lange unbenutzt oder überall abgemeldet). Bitte erneut anmelden; Ihre offene Runde bleibt erhalten.", signing_up: "Ihr Name ist registriert, falls er frei war: Anmeldung läuft…",
    language: "Sprache", signed_in: "Angemeldet als {name}",
    login_title: "Zum Spielen anmelden", login_intro: "Ein neuer Spieler beginnt mit einem Demo-Guthaben. Die PIN bestätigt Änderungen Ihrer Limits.",
    name: "Name", pin: "PIN", signin: "Anmelden", new_player: "Neuer Spieler",
    pays: "Auszahlung", three_kind_row: "Drilling", spread_row: "Spread {a}", spread_rows: "Spread {a}–{b}", consecutive_row: "Aufeinanderfolgend",
    push_word: "Unentschieden", to_one: "{n} zu 1",
    add_seat: "Platz hinzufügen", remove_seat: "Platz entfernen", seat: "Platz {n}", raise_seat: "Erhöhen Platz {n}", stand_seat: "Stehen Platz {n}",
    deal: "Geben", raise: "Erhöhen", stand: "Stehen", clear: "Einsatz entfernen", repeat: "Einsatz wiederholen",
    player: "Spieler", balance: "Guthaben", bet: "Einsatz", limits: "Limits", last_bet: "Letzter Einsatz",
    fairness: "Fairness", next_round: "Nächste Runde", commitment: "Commitment", nonce: "Nonce", round: "Runde", table_decks: "Tisch · Decks",
    rules_digest: "Regel-Digest", fair_summary: "Vor Ihrem Einsatz versiegelt: Die Karten stehen durch das Commitment {c} fest, für die Regeln {r}. Öffnen für Details.", fair_summary_norules: "Vor Ihrem Einsatz versiegelt: Die Karten stehen durch das Commitment {c} fest. Öffnen für Details.", fair_none: "Keine Runde wartet auf einen Einsatz.",
    client_seed: "Ihr Client-Seed", new_seed: "Neuer Zufalls-Seed", last_round: "Letzte Runde", checks: "Prüfungen und Offenlegung",
    my_limits: "Meine Limits", options: "Optionen", sound: "Ton", voice: "Stimme", animation: "Animation",
    place_bet: "Platzieren Sie Ihren Einsatz.", raise_or_stand: "{hand}: erhöhen oder stehen?",
    pair: "Paar", consecutive: "Aufeinanderfolgend", spread: "Spread {n}", marker: "Red Dog: Spread {n} — zahlt {odds} zu 1",
    win: "Gewonnen: {returned} zurück auf {stake} ({why}, {odds} zu 1)", push: "Unentschieden: {returned} zurück ({why})",
    lose: "Verloren: {stake} ({why})", voided: "Runde annulliert: Einsatz von {bet} erstattet",
    r_three_of_a_kind: "Drilling", r_pair_no_match: "Paar ohne Drilling", r_consecutive: "aufeinanderfolgende Karten",
    r_third_card_between: "dritte Karte dazwischen", r_third_card_matches: "dritte Karte gleich", r_third_card_outside: "dritte Karte außerhalb",
    verifying: "Prüfung in Ihrem Browser…",
    signature_ok: "Auch die Signatur der Engine über die Offenlegung ist gültig.",
    verified: "✔ In Ihrem Browser geprüft: die Offenlegung der Engine und dieser Bildschirm stimmen überein — {fields}.",
    not_verified: "✘ Nicht geprüft: {wrong}.", reveal_ok: " Die Offenlegung selbst ist korrekt{rest}.", and_so_do: ", ebenso {fields}",
    mismatch: "{field} hier ({shown}) ist nicht, was die Offenlegung sagt ({expected})",
    f_cards: "die Karten auf dem Tisch", f_hand: "die Hand (Paar, aufeinanderfolgend oder Spread)", f_seats: "die Zahl der Plätze", f_bet: "der Einsatz",
    f_decision: "Erhöhen oder Stehen", f_stake: "der Gesamteinsatz", f_outcome: "das Ergebnis", f_returned: "der gutgeschriebene Betrag",
    f_balance: "die Änderung des Guthabens", f_transcripts: "das Transkript der Runde", f_commitment: "das vor dem Geben gezeigte Commitment",
    f_rules_digest: "die mit dem Commitment gezeigten Regeln", f_seat: "Platz {n}: {what}",
    ranks: ["Zwei", "Drei", "Vier", "Fünf", "Sechs", "Sieben", "Acht", "Neun", "Zehn", "Bube", "Dame", "König", "Ass"],
    suits: { c: "Kreuz", d: "Karo", h: "Herz", s: "Pik" }, card: "{suit} {rank}",
    no_card: "keine Karte", face_down: "verdeckte Karte",
  },
};

let LANG = "en";
let CURRENCY = "XXX";
let EXP = 2;

const KEY = (player) => `reddog.lang${player ? `.${player}` : ""}`;

// The browser's first supported language.
export function browserLang() {
  for (const l of navigator.languages || [navigator.language || "en"]) {
    const base = String(l).toLowerCase().split("-")[0];
    if (C[base]) return base;
  }
  return "en";
}

// The player's remembered choice (or this browser's last choice before signing in), else the browser's.
export function chooseLang(player) {
  const kept = localStorage.getItem(KEY(player)) || (player ? null : localStorage.getItem(KEY(null)));
  setLang(kept && C[kept] ? kept : browserLang());
  return LANG;
}
export function rememberLang(lang, player) {
  if (!C[lang]) return;
  localStorage.setItem(KEY(player), lang);
  localStorage.setItem(KEY(null), lang);
}
export function setLang(lang) {
  LANG = C[lang] ? lang : "en";
  document.documentElement.lang = LANG;
}
export const lang = () => LANG;

export function t(key, params = {}) {
  const s = C[LANG][key] ?? C.en[key] ?? key;
  return typeof s === "string" ? s.replace(/\{(\w+)\}/g, (m, k) => (params[k] ?? m)) : s;
}

// Every element with data-i18n gets its text (data-i18n-attr: an attribute instead).
export function translatePage(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) {
    const text = t(el.dataset.i18n);
    if (el.dataset.i18nAttr) el.setAttribute(el.dataset.i18nAttr, text); else el.textContent = text;
  }
}

export function setCurrency(code, exponent) {
  CURRENCY = code || "XXX";
  if (Number.isInteger(exponent) && exponent >= 0 && exponent <= 6) EXP = exponent;
}

// Minor units (an integer) in the language's number format with the table's currency
// sign ("XXX": none). The amount is passed to Intl as an exact decimal string, never a float.
export function formatMoney(minor, { sign = true } = {}) {
  if (minor === null || minor === undefined || minor === "") return "—";
  const n = BigInt(minor);
  const a = n < 0n ? -n : n;
  const unit = 10n ** BigInt(EXP);
  const text = `${n < 0n ? "-" : ""}${a / unit}${EXP ? `.${String(a % unit).padStart(EXP, "0")}` : ""}`;
  const withSign = sign && CURRENCY !== "XXX";
  const nf = new Intl.NumberFormat(LANG, withSign
    ? { style: "currency", currency: CURRENCY, minimumFractionDigits: EXP, maximumFractionDigits: EXP }
    : { minimumFractionDigits: EXP, maximumFractionDigits: EXP });
  return nf.format(text);
}

export function formatNumber(n) { return new Intl.NumberFormat(LANG).format(n); }
export function formatDate(ms, opts) { return new Intl.DateTimeFormat(LANG, opts || { dateStyle: "medium", timeStyle: "short" }).format(new Date(ms)); }

export function cardWords(code) {
  const rank = C[LANG].ranks["23456789TJQKA".indexOf(code[0])];
  return t("card", { rank, suit: C[LANG].suits[code[1]] });
}
