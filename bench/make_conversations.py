#!/usr/bin/env python
"""Write the labelled conversation set used by bench/eval_retrieval.py (hand-authored, deterministic).

Twelve dated chat sessions between Maya (a backend lead) and Theo (her QA colleague and friend), from January
to April 2024: a billing migration called Heron, Maya's flat move, her knee injury, pottery, Theo's orchestra
and Japan trip. Facts change over time (launch date, move date, rent, itinerary), so some answers are only
right for one session. Turns are written below as "M: text" / "T: text" lines; a trailing "{tag}" names a
turn that a question points at, and the tags are resolved to stable turn ids ("s03-t017") on output.

    python -m bench.make_conversations            # rewrite tests/data/conversations.jsonl and questions
    python -m bench.make_conversations --check    # exit 1 if the committed files differ from this script
"""

# ruff: noqa: E501  (the conversation turns below are prose, one turn a line)

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TURNS_PATH = ROOT / "tests" / "data" / "conversations.jsonl"
QUESTIONS_PATH = ROOT / "tests" / "data" / "conversation_questions.jsonl"
SPEAKERS = {"M": "Maya", "T": "Theo"}

SESSIONS: list[tuple[str, str]] = [
    (
        "2024-01-08",
        """
M: Morning Theo! Happy new year. Did you have a good break?
T: Happy new year! Quiet one. Jonah and I stayed in Bristol and mostly walked Biscuit along the harbour.
M: Lovely. I spent most of it at my parents' place in Leeds eating far too much.
T: So, Heron. Ruth wants a status note by Friday. Where are we?
M: The plan is still to move billing off MySQL 5.7 onto Postgres 16, and switch card payments to Quillpay. {heron_scope}
T: And the target launch date is still the fourth of March?
M: Yes, March 4 is the date Ruth gave the board. It's tight but doable. {launch_orig}
T: What's the budget looking like?
M: We have 48,000 pounds for contractors this quarter, most of it for the two data migration contractors. {budget}
T: OK. I'll start on the test plan this week. I want a full copy of production invoices on staging.
M: The staging cluster is kestrel-2; ask Dmitri in platform for access, he owns it. {kestrel}
T: Dmitri, got it. Any new year resolutions on your side?
M: Two. Get the knee sorted and finally learn to throw pots on a wheel. {resolutions}
T: Pottery! Where?
M: There's a studio called Clayhaus in Stokes Croft with a Thursday evening beginners' course. Eight weeks. {clayhaus}
T: That sounds great. What's wrong with the knee?
M: It started aching on the outside after my long runs in December. I'm training for the Bath Half. {knee_start}
T: Have you seen anyone about it?
M: Not yet. I've booked a physio for next Tuesday. {physio_booked}
T: Good. Also, are you still thinking about moving?
M: Very much. The lease on my Easton flat ends in March and the landlord is raising the rent by 200 a month. {move_reason}
T: Ouch. Where are you looking?
M: Bishopston, near Gloucester Road ideally, or Bedminster if I have to be sensible about money. {move_areas}
T: Jonah's cousin lived on Gloucester Road, he loved it. Lots of independent shops.
M: That's the appeal. Right, I'll write up the Heron risks tonight and send them over.
T: Perfect. Talk next week.
""",
    ),
    (
        "2024-01-15",
        """
T: Hi Maya, how did the physio go?
M: Really useful. Her name is Priya Raman and she thinks it's iliotibial band syndrome, not the joint itself. {itb}
T: Is that the one runners get from the band along the outside of the thigh?
M: Exactly. She gave me clamshells, side planks and a lot of foam rolling, twice a day. {exercises}
T: Does that mean no running?
M: Short easy runs only, nothing over five kilometres for three weeks. {run_limit}
T: Fair enough. Work news: I got onto kestrel-2. Dmitri was very helpful.
M: Great. Did you manage to load the invoices?
T: Mostly. Something odd though: invoices with over a thousand line items come out a penny off on the VAT total. {rounding_bug}
M: A penny off? Is it the rounding mode?
T: MySQL rounds half up per line and the new Postgres code rounds the total with banker's rounding. I filed it as BILL-4412. {bill4412}
M: Good catch. Assign it to me, I wrote that rounding function.
T: Done. Also, how was the first pottery class?
M: Messy and wonderful. The teacher, Ines, made it look effortless. I managed to centre the clay exactly once. {ines}
T: Did you make anything?
M: A very lopsided bowl. Ines said the first bowl always leans, so I'm keeping it as a trophy. {lopsided}
T: Ha. Speaking of hobbies, I've rejoined the orchestra after a year off.
M: The Riverside Sinfonia? What's the programme?
T: Yes, the Bristol Riverside Sinfonia. The spring concert is Dvořák's Eighth Symphony and Elgar's Serenade for Strings. {concert_programme}
M: Ambitious! When is it?
T: Saturday the 20th of April, at St George's on Brandon Hill. {concert_date}
M: I'll be there. Put me down for a ticket.
T: Will do. And any flats yet?
M: Two viewings on Saturday, one in Bedminster and one just off Gloucester Road.
T: Fingers crossed.
""",
    ),
    (
        "2024-01-23",
        """
M: Theo, I think I found the flat.
T: Tell me everything.
M: The Gloucester Road one. Second floor, a big kitchen with a window over the garden, and a tiny balcony. {flat_features}
T: And Bedminster?
M: Cheaper, 1,150 a month, but the living room gets basically no natural light. I couldn't face another dark winter. {bedminster}
T: What's the rent on Gloucester Road?
M: They're asking 1,400 a month. I'm going to try to negotiate. {rent_ask}
T: Worth a try. Who's the landlord?
M: A retired teacher called Mr Okafor. He said he'd rather have a long-term tenant than squeeze the price. {okafor}
T: That's promising. How's BILL-4412?
M: Fixed on my branch. I made the new code round each line half up, same as the old system, then sum. {bill4412_fix}
T: I'll rerun the thousand-line invoices on kestrel-2 tomorrow.
M: Thanks. The bigger worry is Quillpay. They emailed to say they're changing how webhooks are signed in February. {quillpay_webhook}
T: Changing how? Do we have to redo the integration?
M: They're moving from a shared secret to asymmetric signatures with rotating keys. Our verification code needs rewriting. {webhook_detail}
T: How long would that take?
M: Maybe a week and a half with testing. It eats most of our buffer before March 4. {buffer}
T: Have you told Ruth?
M: Not yet. I want numbers first.
T: Sensible. Unrelated, but Biscuit ate an entire sock on Sunday.
M: Oh no! Is he alright?
T: He's fine now, but it meant an emergency trip to the vet and a 340 pound bill. {sock}
M: That dog. Did he at least look sorry?
T: Not remotely. He tried to eat the other sock in the car home.
M: Ha! Give him a scratch from me.
T: Will do. How's the knee, by the way?
M: Better. The foam roller is torture but it's working. I ran four kilometres yesterday without pain. {knee_better1}
T: Nice. Don't push it.
""",
    ),
    (
        "2024-01-30",
        """
T: Morning. Did Mr Okafor budge on the rent?
M: He did! We agreed on 1,350 a month if I sign for two years. {rent_agreed}
T: Brilliant. Are you signing?
M: Signed on Friday. The move-in date is Saturday the 9th of March. {move_date_orig}
T: That's the weekend after the Heron launch. Brave.
M: I know. Terrible planning, but the Easton lease runs out on the 10th.
T: Have you booked movers?
M: I got three quotes. Two Owls Removals were the cheapest at 620 pounds, and they do packing too. {two_owls}
T: Jonah used them when he moved his studio, they were careful with his prints.
M: Good to hear. So, Heron. I talked to Ruth about the Quillpay change.
T: And?
M: She agrees the webhook rewrite is unavoidable. She's asking whether we should move the launch. {ruth_launch}
T: What do you think?
M: I'd rather launch two weeks later than launch with half-tested payments. I'm proposing March 18. {propose_18}
T: I'd support that. QA is behind on the refund flows anyway.
M: Behind how much?
T: About forty refund scenarios still to automate. Partial refunds across currencies are the nasty ones. {refunds}
M: Can the new hire help? Ruth says someone starts in February.
T: Kasimir? I met him at the interview. He wrote the test framework at his last job, he'd be perfect. {kasimir_intro}
M: Then let's put him on refunds as soon as he's set up.
T: Agreed. You sound tired, by the way. Coffee?
M: Oolong, always. You know coffee makes me jittery. {oolong}
T: Fair. How's the pottery going?
M: Week three. We did pulling walls today, making cylinders taller. Mine collapsed twice. {cylinders}
T: Collapsing is progress.
M: That's what Ines said. She also said I throw too wet.
T: I don't know what that means, but it sounds like a personal attack.
M: It means too much water on the clay. Which is fair. {too_wet}
""",
    ),
    (
        "2024-02-06",
        """
M: Big news: Ruth approved moving the Heron launch to March 18. {launch_moved}
T: Great. Is the board fine with it?
M: She told them it was a payment-safety decision, and they accepted it without a fuss. {board}
T: Relief. Kasimir started yesterday, by the way.
M: How's he getting on?
T: Very quick. He already automated twelve of the refund scenarios using a table-driven approach. {kasimir_12}
M: Twelve in a day? Impressive.
T: He's quiet but relentless. He also keeps a cactus on his desk called Boris. {boris}
M: I like him already.
T: How's the webhook rewrite?
M: Half done. Quillpay's sandbox only rotates keys every hour, so testing rotation is slow. {sandbox_rotation}
T: Can we fake the rotation?
M: I'm writing a small key server for tests so we can rotate every second. {key_server}
T: Nice. Let me know when I can point the QA suite at it.
M: Probably Thursday. Speaking of Thursday, I've moved on from bowls in pottery.
T: To what?
M: Mugs! Handles are much harder than they look. Ines makes us pull them from a lump of clay. {mugs}
T: Who are the mugs for?
M: If they turn out, a set of four for my sister Leonor. She's getting married in June. {leonor_wedding}
T: Oh congratulations to her! Where's the wedding?
M: Lisbon, on the 15th of June. Our mum's side is Portuguese, so half the family is there anyway. {lisbon}
T: Are you giving a speech?
M: I'm the maid of honour, so yes. I'm already dreading it. {maid_of_honour}
T: You'll be great. You present to the board without blinking.
M: The board doesn't cry at the end, though.
T: On travel, Jonah and I finally booked flights to Japan.
M: Finally! When?
T: The 11th to the 25th of May. Tokyo first, then Kyoto, then Osaka. {japan_dates}
M: Two weeks! I'm jealous.
""",
    ),
    (
        "2024-02-13",
        """
T: Quick one before standup: are you coming to the team dinner on the 29th?
M: Yes. Where is it?
T: Ruth wants suggestions. She asked me because I'm apparently the food person.
M: Remember I'm vegetarian, and please nowhere that puts coriander on everything. {veg_coriander}
T: Noted. I was thinking of that Sri Lankan place, Coconut Tree.
M: That's my favourite restaurant in Bristol! Their hoppers are perfect. {coconut_tree}
T: Although I have to be careful there, a lot of their dishes have cashews and I'm allergic. {cashew}
M: They're good about allergies, just tell them when booking.
T: OK, I'll book Coconut Tree for twelve people. {booked_dinner}
M: Perfect. Are you doing any exercise these days?
T: None, you know me. I'm strictly a cellist. Speaking of, rehearsals are getting intense.
M: Which bit is hard?
T: The third movement of the Dvořák. It's a waltz, and the cellos keep rushing it. {third_movement}
M: Rushing a waltz sounds very you.
T: Rude but accurate. How's your knee?
M: Up and down. Priya says I can go up to eight kilometres now, but I had a twinge at seven on Sunday. {knee_8k}
T: Is the Bath Half still happening?
M: I'm deciding next week. The race is on the 10th of March, that's very close. {bath_date}
T: Don't risk it for one race.
M: I know. Work: the webhook rewrite is done and merged. {webhook_done}
T: Already? Great.
M: The test key server made a huge difference. Kasimir has pointed the refund suite at it too.
T: Then I'll run the full regression on kestrel-2 tonight.
M: Anything from BILL-4412 after the fix?
T: Clean. I reran all the thousand-line invoices and every VAT total matches to the penny. {bill4412_verified}
M: Excellent. One less thing.
T: Also, my sourdough starter survived the winter. Jonah named it Gerald. {gerald}
M: Of course he did.
""",
    ),
    (
        "2024-02-20",
        """
M: I made the call: I've pulled out of the Bath Half. {bath_withdraw}
T: Sorry Maya. That must be disappointing.
M: It is, but Priya agreed. Racing 21 kilometres on a knee that complains at seven would be stupid. {bath_reason}
T: So what now?
M: I've switched to swimming three mornings a week at Bristol South pool, to keep fitness without the impact. {swimming}
T: Front crawl?
M: Trying. My breathing is a disaster, I can only manage every two strokes.
T: It'll come. Work question: did you see the load test results?
M: Not yet. Bad?
T: The invoice generation endpoint falls over at about 300 requests a second. Old system managed 450. {load_300}
M: That's a problem. End-of-month billing spikes over 400.
T: Kasimir profiled it. Every invoice does a separate query for the customer's tax region. {n_plus_one}
M: Classic N plus one. Can we batch it? {n1_name}
T: He's already got a patch that loads all regions in one query. He thinks it'll triple throughput. {batch_patch}
M: Let's get that reviewed today.
T: Also, Ruth approved 6,500 pounds for a proper load testing tool licence. {load_tool_budget}
M: Which tool?
T: Gatling Enterprise. We can replay last March's end-of-month traffic exactly. {gatling}
M: Great. Oh, and bad news on the flat.
T: Uh oh. Mr Okafor?
M: No, he's fine. The current tenant asked to stay an extra week, so the move-in date is now the 16th of March. {move_date_new}
T: That's two days before the Heron launch.
M: I know. I've asked Two Owls to move the booking, and my Easton landlord agreed to let me stay until then. {movers_moved}
T: Chaos. Need any help packing?
M: Honestly yes. Books, mostly. I have far too many. {packing_books}
T: I'll bring Jonah and a car on the Saturday before. {packing_help}
M: You're a star.
""",
    ),
    (
        "2024-02-27",
        """
T: How did the batch patch do?
M: Amazing. Kasimir's change took the invoice endpoint from 300 to 980 requests a second on kestrel-2. {load_980}
T: Nearly triple, like he said.
M: He deserves a shout-out at the dinner on Thursday.
T: About the dinner: Coconut Tree can only fit ten now, so two people will join later for dessert. {dinner_ten}
M: Fine by me. Who are the twelve again?
T: The Heron team, Ruth, Dmitri from platform and his manager.
M: Perfect. Pottery news: the mugs came out of the kiln!
T: And?
M: Three are lovely. The fourth cracked at the handle, so Leonor is getting three mugs and a story. {mug_cracked}
T: What glaze did you use?
M: A pale green celadon. Ines says it suits the shape. {celadon}
T: Sounds beautiful. How's the swimming?
M: I can breathe every three strokes now! Bilateral breathing, Priya's idea, to balance the shoulders. {bilateral}
T: Progress. Any word from Quillpay?
M: Yes, they confirmed the new signing keys go live on their production on the 11th of March. {quillpay_live}
T: A week before our launch. That's good timing actually.
M: Exactly, we can verify with real keys before switching traffic.
T: I've written the cutover runbook. Can you review it?
M: Send it over. Does it include the rollback?
T: Yes. If payments fail for more than five minutes we flip traffic back to the old MySQL stack. {rollback}
M: Good. And the data freeze?
T: Freeze starts on the Friday before, the 15th, at 6pm. {freeze}
M: The day before I move. Of course it is.
T: I'll handle the freeze checks, you handle the boxes.
M: Deal. Also, I'm reading Piranesi for book club. Have you read it?
T: Loved it. The house with the statues and tides, right? {piranesi}
M: Yes! I'm halfway through and completely lost in it.
""",
    ),
    (
        "2024-03-05",
        """
M: Theo, one week to the freeze. How are you feeling?
T: Nervous but OK. The regression suite has been green on kestrel-2 for three days running. {green}
M: And the refunds?
T: All forty scenarios automated. Kasimir finished the cross-currency ones on Friday. {refunds_done}
M: That's huge. Let's make sure Ruth hears about it.
T: She already did. She's talking about making him the owner of the refund service. {kasimir_owner}
M: Deserved. How was the team dinner, by the way? I had to leave early.
T: Great. Dmitri gave a toast to the launch and Ruth ordered hoppers for the whole table. {dinner_toast}
M: Sorry I missed the end. My swimming alarm goes off at six.
T: Speaking of: how is the knee these days?
M: Really good. Priya cleared me to run again, starting with run-walk intervals, a minute each. {run_walk}
T: Was it worth skipping Bath then?
M: Definitely. She said if I'd raced I'd probably be out for months. {bath_worth}
T: Any other race plans?
M: Maybe the Bristol 10k in May, if everything holds up. {bristol_10k}
T: Good target. I have travel news too.
M: Japan?
T: We've changed the plan. We're dropping Osaka and going to Kanazawa instead. {kanazawa}
M: Oh, that was my suggestion! Kenroku-en garden and the 21st Century Museum are unmissable. {kanazawa_why}
T: Exactly why. Jonah's an artist, he wants the museum more than anything.
M: Are you getting a JR Pass?
T: No. The price went up so much it's cheaper to buy the shinkansen tickets one by one. {jr_pass}
M: Makes sense for a short route.
T: And the move? Still the 16th?
M: Still the 16th. Two Owls confirmed 8am. {two_owls_8am}
T: Jonah and I will come on the 9th to help pack the books.
M: I'll buy pizza. Thank you both.
""",
    ),
    (
        "2024-03-12",
        """
T: Freeze on Friday. Last check: did the Quillpay keys go live yesterday?
M: They did, and our verification passed on the first real webhook. {keys_live_ok}
T: Great. Anything else on your worry list?
M: DNS. Dmitri wants to cut the payment domain over on the Monday morning, and the TTL is still a day. {dns_ttl}
T: That sounds like it could bite us.
M: I've asked him to lower the TTL to five minutes today so it propagates before launch. {ttl_lower}
T: Good. Did your book club finally meet?
M: On Sunday. Half the group thought the ending of Piranesi was sad, I thought it was hopeful. {piranesi_ending}
T: Hopeful, definitely. He chooses the world he loves.
M: Right? Anyway, how are rehearsals?
T: Much better. The conductor slowed the third movement right down and suddenly we stopped rushing. {slowed}
M: Told you it was you.
T: It was all of us! Also, I've been asked to play a short solo in the Elgar. {elgar_solo}
M: Theo! That's wonderful.
T: Only eight bars, but I'm terrified.
M: You'll be great. I've bought my ticket for the 20th.
T: Thank you. How's the packing?
M: Thirty boxes so far, twenty of them books. Thanks again for Saturday. {boxes}
T: Jonah still has paper cuts.
M: Tell him the pizza was payment.
T: He says it was worth it. Is the internet sorted at the new flat?
M: The fibre installer comes on the 20th, so I'll be on my phone hotspot for four days. {fibre}
T: During launch week. Bold.
M: I'll work from the office that week. Ruth's booked a war room anyway. {war_room}
T: Good call. Which room?
M: The big one on the third floor, with the broken blinds. {war_room_where}
T: Classic. See you there.
""",
    ),
    (
        "2024-03-26",
        """
M: Well, we made it. Heron is live!
T: Barely. Remind me why we launched on the 19th and not the 18th? {launch_19_q}
M: The DNS change didn't propagate in time on Monday morning. Dmitri had lowered the TTL on the wrong record. {launch_19}
T: So we held traffic for a day.
M: Exactly. We flipped on Tuesday the 19th at 9am and everything went smoothly. {launch_19_time}
T: Any payment failures since?
M: Two, both caused by expired cards, not by us. The rollback never triggered. {failures}
T: Good. Ruth wants a post-mortem on Thursday.
M: I'm writing it. The main lesson is that DNS changes need a second pair of eyes. {lesson_dns}
T: And a checklist. I'll add one to the runbook. {runbook_checklist}
M: Thanks. How is the solo coming along?
T: Better. I've been practising the eight bars every morning before work.
M: Good. Now ask me about the new flat!
T: I was about to! How's Gloucester Road?
M: I love it. The kitchen is even bigger than I remembered, and the balcony catches the evening sun. {flat_love}
T: And the move itself?
M: Two Owls were brilliant. Four people, done by 1pm, and nothing broke except one of my pottery bowls. {move_day}
T: Not the lopsided one?
M: The lopsided one survived, sadly. A nice one broke. {lopsided_survived}
T: The universe has a sense of humour.
M: Clearly. How's Biscuit?
T: Behaving, mostly. We've hidden every sock in the house.
M: Wise. How's Kasimir settling in as refund owner?
T: Officially the owner from April. He's already asked for a second engineer. {kasimir_april}
M: Good for him. I might lend him Theo.
T: Please don't.
""",
    ),
    (
        "2024-04-09",
        """
T: Hey Maya, how was the post-mortem?
M: Good. Ruth liked the DNS checklist, and she wants it in every cutover runbook from now on. {checklist_adopted}
T: Nice. Any action items for me?
M: Just one: document how to rerun the BILL-4412 rounding check, so finance can do it each quarter. {bill4412_action}
T: Easy. What's next for you after Heron?
M: Ruth asked me to lead the tax engine work in Q3. I said yes, but only after my leave in June. {tax_engine}
T: For the wedding.
M: Yes, I'm off from the 10th to the 21st of June. {leave_dates}
T: How's the speech?
M: First draft is done. It starts with the story of the cracked mug. {speech_mug}
T: Perfect opener. How's the running?
M: I ran five kilometres without stopping on Sunday, no knee pain at all. {run_5k}
T: That's brilliant!
M: I've signed up for the Bristol 10k on the 12th of May. {signed_10k}
T: The day after we fly to Japan. I'll be cheering from Tokyo.
M: Have you finalised the itinerary?
T: Tokyo for five nights, Kyoto for four, Kanazawa for three, then back to Tokyo for the flight. {itinerary}
M: That's a lot of packing and unpacking.
T: We're sending our big bags ahead with takkyubin, the luggage courier. {takkyubin}
M: Genius. And the concert is a week on Saturday?
T: The 20th, yes. Dress rehearsal is on the Thursday.
M: Nervous about the solo?
T: Less than before. The conductor said my tone was lovely, which I am choosing to believe.
M: Believe it. I'll be in the second row.
T: Bring the cracked-mug story, I need material for the interval.
M: Deal. One last thing: I've switched from oolong to green tea in the afternoons. Less caffeine, better sleep. {tea_switch}
T: Very sensible. I'm sticking with flat whites.
M: Of course you are.
""",
    ),
]

# (question, answer tags, kind). Kinds: lexical (exact names and numbers), paraphrase (meaning, other words),
# speaker_time (needs who said it or when), neighbour (the words match the turn before the answer),
# rare (a rare token that the keyword index should find).
QUESTIONS: list[tuple[str, list[str], str]] = [
    ("What is BILL-4412 about?", ["bill4412", "rounding_bug"], "lexical"),
    ("Who owns the kestrel-2 staging cluster?", ["kestrel"], "lexical"),
    ("How much did Two Owls Removals quote for the move?", ["two_owls"], "lexical"),
    ("What is the name of Theo's sourdough starter?", ["gerald"], "lexical"),
    ("What is Kasimir's cactus called?", ["boris"], "lexical"),
    ("Which pieces is the Bristol Riverside Sinfonia playing at the spring concert?", ["concert_programme"], "lexical"),
    ("How much did Ruth approve for the Gatling Enterprise licence?", ["load_tool_budget", "gatling"], "lexical"),
    ("What monthly rent did Maya agree with Mr Okafor?", ["rent_agreed"], "lexical"),
    ("When is Leonor's wedding in Lisbon?", ["lisbon"], "lexical"),
    ("What is the contractor budget for Heron this quarter?", ["budget"], "lexical"),
    ("Which studio does Maya take her pottery course at?", ["clayhaus"], "lexical"),
    ("How many requests per second did the invoice endpoint handle after the batching patch?", ["load_980"], "lexical"),
    ("What time does the Heron data freeze start?", ["freeze"], "lexical"),
    ("When do Quillpay's new signing keys go live in production?", ["quillpay_live"], "lexical"),
    ("What glaze did Maya use on the mugs?", ["celadon"], "lexical"),
    ("What is the Heron project migrating to?", ["heron_scope"], "lexical"),
    ("What's wrong with Maya's leg according to her physiotherapist?", ["itb"], "paraphrase"),
    ("Why is Maya leaving her current apartment?", ["move_reason"], "paraphrase"),
    ("What did the vet visit cost after the dog swallowed something it shouldn't have?", ["sock"], "paraphrase"),
    ("Why didn't Maya pick the cheaper place south of the river?", ["bedminster"], "paraphrase"),
    ("What does Maya's physical therapy routine involve?", ["exercises"], "paraphrase"),
    ("How did Maya keep fit once she stopped training for the race?", ["swimming"], "paraphrase"),
    ("Why was the invoice service slow under heavy traffic?", ["n_plus_one"], "paraphrase"),
    ("What is the plan if the new payment system breaks after going live?", ["rollback"], "paraphrase"),
    ("What should a restaurant know about Maya's diet?", ["veg_coriander"], "paraphrase"),
    ("Which food can't Theo eat?", ["cashew"], "paraphrase"),
    ("How did Maya feel about how the novel her reading group discussed ends?", ["piranesi_ending"], "paraphrase"),
    ("What pushed the go-live back by a day?", ["launch_19"], "paraphrase"),
    ("What will Maya work on after the billing project?", ["tax_engine"], "paraphrase"),
    ("How long will Maya be on holiday for her sister's ceremony?", ["leave_dates"], "paraphrase"),
    ("What does Maya like about her new home now that she lives there?", ["flat_love"], "paraphrase"),
    ("How did relocation day go?", ["move_day"], "paraphrase"),
    ("What did the orchestra's leader change to fix the tempo problem?", ["slowed"], "paraphrase"),
    ("What did Maya's first ceramics piece look like?", ["lopsided"], "paraphrase"),
    ("What were Maya's goals for the new year?", ["resolutions"], "paraphrase"),
    ("How did the new engineer speed up the refund testing?", ["kasimir_12"], "paraphrase"),
    ("What was the lesson learned from the go-live incident?", ["lesson_dns"], "paraphrase"),
    ("Why did Theo decide against a rail pass?", ["jr_pass"], "paraphrase"),
    ("How will Maya get online at her new place during the first days?", ["fibre"], "paraphrase"),
    ("How are Theo and Jonah dealing with their luggage while travelling around Japan?", ["takkyubin"], "paraphrase"),
    ("What launch date did Maya give in the 2024-01-08 session?", ["launch_orig"], "speaker_time"),
    ("What move-in date did Maya mention on 2024-01-30?", ["move_date_orig"], "speaker_time"),
    ("What did Maya say the new move-in date was in the 2024-02-20 session?", ["move_date_new"], "speaker_time"),
    ("What did Theo say about refund scenarios on 2024-01-30?", ["refunds"], "speaker_time"),
    ("What did Maya say about her knee on 2024-02-13?", ["knee_8k"], "speaker_time"),
    ("What did Theo say about Kasimir in the 2024-03-26 session?", ["kasimir_april"], "speaker_time"),
    ("What did Maya tell Theo about the webhook rewrite on 2024-02-13?", ["webhook_done"], "speaker_time"),
    ("What travel plans did Theo announce on 2024-02-06?", ["japan_dates"], "speaker_time"),
    ("What change to the Japan trip did Theo mention in March?", ["kanazawa"], "speaker_time"),
    ("What did Maya say about her running in the April session?", ["run_5k", "signed_10k"], "speaker_time"),
    ("What did Theo report about the load test on 2024-02-20?", ["load_300"], "speaker_time"),
    ("What did Maya say about her tea habits in April?", ["tea_switch"], "speaker_time"),
    ("What did Theo say about the dinner booking on 2024-02-27?", ["dinner_ten"], "speaker_time"),
    (
        "What did Maya say Quillpay's email was about in late January?",
        ["quillpay_webhook", "webhook_detail"],
        "speaker_time",
    ),
    ("What did Maya say she'd do about the Bath Half in the 2024-02-13 session?", ["bath_date"], "speaker_time"),
    ("When did Heron actually go live?", ["launch_19_q", "launch_19_time"], "speaker_time"),
    ("Who did Maya plan to give her pottery mugs to?", ["leonor_wedding"], "neighbour"),
    ("Has Maya had anyone look at her knee yet?", ["physio_booked"], "neighbour"),
    ("What does throwing too wet mean?", ["too_wet"], "neighbour"),
    ("How long would the webhook verification rewrite take?", ["buffer"], "neighbour"),
    ("Was skipping the Bath Half worth it for Maya?", ["bath_worth"], "neighbour"),
    ("Does the cutover runbook include a rollback?", ["rollback"], "neighbour"),
    ("Who offered to help Maya pack her books?", ["packing_help"], "neighbour"),
    ("Has Theo read Piranesi, and what did he think?", ["piranesi"], "neighbour"),
    ("Is Theo getting a JR Pass for Japan?", ["jr_pass"], "neighbour"),
    ("Which room is the launch war room?", ["war_room_where"], "neighbour"),
    ("Is Maya still moving on the 16th, and when do the movers arrive?", ["two_owls_8am"], "neighbour"),
    ("What does Maya drink instead of coffee?", ["oolong"], "neighbour"),
    ("What is takkyubin?", ["takkyubin"], "rare"),
    ("Who ordered hoppers at the team dinner?", ["dinner_toast"], "rare"),
    ("What did Maya say about Kenroku-en?", ["kanazawa_why"], "rare"),
    ("What did Maya ask Dmitri to lower the TTL to?", ["ttl_lower"], "rare"),
    ("How often should Maya do the clamshells?", ["exercises"], "rare"),
    ("Which hall on Brandon Hill is the concert at?", ["concert_date"], "rare"),
    ("Where did the N plus one query come from?", ["n_plus_one", "n1_name"], "rare"),
    ("What did Priya suggest about bilateral breathing?", ["bilateral"], "rare"),
]

_LINE = re.compile(r"^(?P<who>[MT]): (?P<text>.+?)(?: \{(?P<tag>[a-z0-9_]+)\})?$")


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turns and the questions, with tags resolved to turn ids; raises ValueError on a malformed entry."""
    turns: list[dict[str, Any]] = []
    tags: dict[str, str] = {}
    for number, (date, body) in enumerate(SESSIONS, start=1):
        session = f"s{number:02d}"
        lines = [line for line in body.strip().splitlines() if line.strip()]
        for index, line in enumerate(lines, start=1):
            match = _LINE.match(line)
            if match is None:
                raise ValueError(f"{session}: malformed turn line {line!r}")
            turn_id = f"{session}-t{index:03d}"
            tag = match.group("tag")
            if tag:
                if tag in tags:
                    raise ValueError(f"duplicate tag {tag!r}")
                tags[tag] = turn_id
            turns.append(
                {
                    "id": turn_id,
                    "session": session,
                    "date": date,
                    "speaker": SPEAKERS[match.group("who")],
                    "text": match.group("text"),
                }
            )
    questions: list[dict[str, Any]] = []
    for number, (question, answer_tags, kind) in enumerate(QUESTIONS, start=1):
        missing = [tag for tag in answer_tags if tag not in tags]
        if missing:
            raise ValueError(f"question {question!r} names unknown tags {missing}")
        questions.append(
            {"id": f"q{number:03d}", "question": question, "answers": [tags[t] for t in answer_tags], "kind": kind}
        )
    return turns, questions


def render(rows: list[dict[str, Any]]) -> str:
    """JSON lines, one object per line, keys in a fixed order (so the output is byte-for-byte stable)."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args(argv)
    turns, questions = build()
    outputs = {TURNS_PATH: render(turns), QUESTIONS_PATH: render(questions)}
    if args.check:
        stale = [str(p) for p, text in outputs.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print("out of date (run bench/make_conversations.py): " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"{len(turns)} turns in {len(SESSIONS)} sessions, {len(questions)} questions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
